/* Attention sinks: the gradient of the per-head sink logits (fa_sink.c). */
#ifndef ATTNOPS_FA_SINK_H
#define ATTNOPS_FA_SINK_H

#include "fa/fa_problem.h"

/* p->dsink[h] for every head from dy, attention_in and the statistics; no-op without dsink. */
void fa_sink_grad(const fa_problem *p);

#endif
