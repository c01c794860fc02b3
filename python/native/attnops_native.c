/* attnops._native: the numpy binding's per-call marshalling, in C (attnops.golden;
 * the torch ops have their own binding, python/csrc).
 *
 * Writing an attnops_tensor view in Python (struct.pack_into per view) cost
 * ~3.5 us a view, and a call passes up to a dozen; here a view costs reading
 * its description.  The two-phase call (workspace query, workspace, run) is
 * one Python call with the GIL released while the library works.
 *
 * libattnops is not linked: its functions are the addresses ctypes resolved
 * (python/attnops/_lib.py), so there is one copy of the library's
 * thread-local error state.  Limited API (abi3): one module serves every
 * CPython >= 3.9, and it needs no torch.
 *
 *   init(ops, empty_address)
 *       ops: ((workspace_size_fn, run_fn) addresses, ...) indexed by op id;
 *       empty_address: a pointer handed to the library for arrays without
 *       storage (never read or written).
 *   pack(view_address, item, name)
 *       write the attnops_tensor of `item` at view_address.
 *   bind(struct_address, views_address, slots, names, items)
 *       for each i: pack items[i] at views_address + i * sizeof(attnops_tensor)
 *       and store its address in the struct at byte offset slots[i]; a None
 *       item stores NULL.
 *   run(op, args_address) -> status
 *       the op's workspace query, a workspace, the run; the library's status
 *       is returned (Python raises with its sentence).
 *   layouts()
 *       the byte layouts of the C structs (python/native/layouts.c).
 *
 * An item is the tuple (address, dtype code, shape, element strides)
 * python/attnops/_views.py makes of a numpy array.  Errors raise TypeError /
 * ValueError naming the argument, before anything is written to the struct's
 * slot.
 */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"
#include "layouts.h"

typedef int (*workspace_fn)(const void *args, size_t *size);
typedef int (*run_fn)(const void *args, void *workspace, size_t size);

enum { MAX_OPS = 16, WORKSPACE_ALIGN = 64 };

static struct {
    workspace_fn workspace[MAX_OPS];
    run_fn run[MAX_OPS];
    Py_ssize_t num_ops;
    void *empty; /* NULL until init() */
} st;

static int read_int64s(PyObject *seq, int64_t *out, Py_ssize_t n, const char *what, PyObject *name) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GetItem(seq, i);
        if (!v)
            return -1;
        out[i] = PyLong_AsLongLong(v);
        if (out[i] == -1 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "attnops: %U has a %s entry that is not an integer", name, what);
            return -1;
        }
    }
    return 0;
}

/* shape and strides (tuples of the same length) into the view. */
static int fill_dims(attnops_tensor *v, PyObject *shape, PyObject *strides, PyObject *name) {
    if (!PyTuple_Check(shape) || !PyTuple_Check(strides)) {
        PyErr_Format(PyExc_TypeError, "attnops: %U has a shape or strides that is not a tuple", name);
        return -1;
    }
    Py_ssize_t rank = PyTuple_Size(shape);
    if (rank > ATTNOPS_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "attnops: %U has rank %zd, above the library's maximum of %d", name, rank,
                     ATTNOPS_MAX_RANK);
        return -1;
    }
    if (PyTuple_Size(strides) != rank) {
        PyErr_Format(PyExc_ValueError, "attnops: %U has %zd strides for rank %zd", name, PyTuple_Size(strides),
                     rank);
        return -1;
    }
    v->rank = (int32_t)rank;
    if (read_int64s(shape, v->shape, rank, "shape", name) || read_int64s(strides, v->strides, rank, "stride", name))
        return -1;
    return 0;
}

/* (address, dtype code, shape, strides): an array described by the caller. */
static int describe_tuple(attnops_tensor *v, PyObject *item, PyObject *name) {
    if (PyTuple_Size(item) != 4) {
        PyErr_Format(PyExc_TypeError, "attnops: %U is described by a tuple of %zd items, not 4", name,
                     PyTuple_Size(item));
        return -1;
    }
    v->data = PyLong_AsVoidPtr(PyTuple_GetItem(item, 0));
    if (!v->data && PyErr_Occurred())
        return -1;
    v->dtype = (attnops_dtype)PyLong_AsLong(PyTuple_GetItem(item, 1));
    if (PyErr_Occurred())
        return -1;
    return fill_dims(v, PyTuple_GetItem(item, 2), PyTuple_GetItem(item, 3), name);
}

/* The view of one item into *out (untouched on error). */
static int describe(attnops_tensor *out, PyObject *item, PyObject *name) {
    attnops_tensor v;
    memset(&v, 0, sizeof v);
    if (!PyTuple_Check(item)) {
        PyObject *type = PyObject_Type(item);
        PyErr_Format(PyExc_TypeError, "attnops: %U is a %S, not a described array", name, type);
        Py_XDECREF(type);
        return -1;
    }
    if (describe_tuple(&v, item, name))
        return -1;
    if (!v.data)
        v.data = st.empty;
    *out = v;
    return 0;
}

static int as_address(PyObject *obj, void **out) {
    *out = PyLong_AsVoidPtr(obj);
    return (!*out && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *native_init(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ops, *empty;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &ops, &empty))
        return NULL;
    Py_ssize_t n = PyTuple_Size(ops);
    if (n > MAX_OPS) {
        PyErr_Format(PyExc_ValueError, "attnops._native.init: %zd ops, at most %d", n, (int)MAX_OPS);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        void *ws, *run;
        PyObject *pair = PyTuple_GetItem(ops, i);
        if (!pair || !PyTuple_Check(pair) || PyTuple_Size(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "attnops._native.init: each op is a (workspace, run) address pair");
            return NULL;
        }
        if (as_address(PyTuple_GetItem(pair, 0), &ws) || as_address(PyTuple_GetItem(pair, 1), &run))
            return NULL;
        st.workspace[i] = (workspace_fn)(uintptr_t)ws;
        st.run[i] = (run_fn)(uintptr_t)run;
    }
    if (as_address(empty, &st.empty))
        return NULL;
    st.num_ops = n;
    Py_RETURN_NONE;
}

static int check_ready(void) {
    if (!st.empty) {
        PyErr_SetString(PyExc_RuntimeError, "attnops._native: init() has not been called");
        return -1;
    }
    return 0;
}

static PyObject *native_pack(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *addr, *item, *name;
    void *view;
    if (!PyArg_ParseTuple(args, "OOU", &addr, &item, &name) || check_ready() || as_address(addr, &view))
        return NULL;
    if (describe((attnops_tensor *)view, item, name))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *native_bind(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *struct_addr, *views_addr, *slots, *names, *items;
    char *base, *views;
    if (!PyArg_ParseTuple(args, "OOO!O!O!", &struct_addr, &views_addr, &PyTuple_Type, &slots, &PyTuple_Type, &names,
                          &PyTuple_Type, &items) ||
        check_ready() || as_address(struct_addr, (void **)&base) || as_address(views_addr, (void **)&views))
        return NULL;
    Py_ssize_t n = PyTuple_Size(items);
    if (PyTuple_Size(slots) != n || PyTuple_Size(names) != n) {
        PyErr_SetString(PyExc_ValueError, "attnops._native.bind: slots, names and items differ in length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GetItem(slots, i));
        if (slot < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "attnops._native.bind: a negative slot offset");
            return NULL;
        }
        PyObject *item = PyTuple_GetItem(items, i);
        void *ptr = NULL;
        if (item != Py_None) {
            attnops_tensor *view = (attnops_tensor *)(views + (size_t)i * sizeof(attnops_tensor));
            if (describe(view, item, PyTuple_GetItem(names, i)))
                return NULL;
            ptr = view;
        }
        memcpy(base + slot, &ptr, sizeof ptr);
    }
    Py_RETURN_NONE;
}

/* A call's workspace (uninitialised: the library writes before it reads).  Up to
 * CACHED_WORKSPACE_BYTES it is this thread's buffer, kept between calls and freed
 * when the thread ends, so a decode step or a small problem allocates nothing (a
 * multi-megabyte malloc is an mmap whose pages fault in on every call); a larger
 * one is allocated for the call (*owned, for the caller to free).  The torch
 * binding keeps the same policy (python/csrc/binding.h, Workspace). */
enum { CACHED_WORKSPACE_BYTES = 16 << 20 };

struct cached_workspace {
    void *data;
    size_t size;
};

static pthread_key_t workspace_key;
static pthread_once_t workspace_once = PTHREAD_ONCE_INIT;
static int workspace_key_ok;

static void free_cached_workspace(void *p) {
    struct cached_workspace *c = p;
    free(c->data);
    free(c);
}

static void make_workspace_key(void) { workspace_key_ok = pthread_key_create(&workspace_key, free_cached_workspace) == 0; }

static void *aligned_workspace(size_t size) {
    return aligned_alloc(WORKSPACE_ALIGN, (size + WORKSPACE_ALIGN - 1) / WORKSPACE_ALIGN * WORKSPACE_ALIGN);
}

static void *workspace(size_t size, void **owned) {
    pthread_once(&workspace_once, make_workspace_key);
    if (size > CACHED_WORKSPACE_BYTES || !workspace_key_ok)
        return *owned = aligned_workspace(size);
    struct cached_workspace *c = pthread_getspecific(workspace_key);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c || pthread_setspecific(workspace_key, c)) {
            free(c);
            return *owned = aligned_workspace(size);
        }
    }
    if (c->size < size) {
        free(c->data);
        c->data = aligned_workspace(size);
        c->size = c->data ? size : 0;
    }
    return c->data;
}

static PyObject *native_run(PyObject *self, PyObject *args) {
    (void)self;
    int op;
    PyObject *addr;
    void *op_args;
    if (!PyArg_ParseTuple(args, "iO", &op, &addr) || check_ready() || as_address(addr, &op_args))
        return NULL;
    if (op < 0 || op >= st.num_ops) {
        PyErr_Format(PyExc_ValueError, "attnops._native.run: op %d is not one of the %zd registered", op,
                     st.num_ops);
        return NULL;
    }
    size_t size = 0;
    int status;
    int no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    status = st.workspace[op](op_args, &size);
    if (status == ATTNOPS_SUCCESS) {
        void *owned = NULL;
        void *ws = size ? workspace(size, &owned) : NULL;
        no_memory = size && !ws;
        if (!no_memory)
            status = st.run[op](op_args, ws, size);
        free(owned);
    }
    Py_END_ALLOW_THREADS
    if (no_memory)
        return PyErr_Format(PyExc_MemoryError, "attnops: cannot allocate the %zu-byte workspace", size);
    return PyLong_FromLong(status);
}

static PyMethodDef native_methods[] = {
    {"init", native_init, METH_VARARGS, "init(ops, empty_address)"},
    {"pack", native_pack, METH_VARARGS, "pack(view_address, item, name): write item's attnops_tensor"},
    {"bind", native_bind, METH_VARARGS,
     "bind(struct_address, views_address, slots, names, items): pack the items' views, store their addresses"},
    {"run", native_run, METH_VARARGS, "run(op, args_address) -> status: the two-phase call, GIL released"},
    {"layouts", native_layouts, METH_NOARGS, "layouts() -> the C structs' layouts (python/native/layouts.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native", "the numpy binding's per-call marshalling in C (python/native/attnops_native.c)", -1,
    native_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&native_module); }
