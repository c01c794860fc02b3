/* attnops._native.layouts() (python/native/layouts.c). */
#ifndef ATTNOPS_NATIVE_LAYOUTS_H
#define ATTNOPS_NATIVE_LAYOUTS_H

PyObject *native_layouts(PyObject *self, PyObject *args);

#endif
