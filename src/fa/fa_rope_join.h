/* MLA (spec 1.3): the implementations see one head dim D + Dr.
 * Q = [query | query_rope] and K = [key | key_rope] are gathered into
 * workspace copies, BNSD-dense [B][N][S][D + Dr] ([N][T][D + Dr] in TND,
 * whose views carry the global row); the backward's dq and dk land in two
 * more and are copied out to dq | dq_rope and dk | dk_rope.  Copies are
 * exact (same dtype): each gradient is rounded once, by the implementation.
 * The cost is O(S D) against attention's O(S^2 D).  The API layer calls
 * these around either implementation; for Dr = 0 they do nothing. */
#ifndef ATTNOPS_FA_ROPE_JOIN_H
#define ATTNOPS_FA_ROPE_JOIN_H

#include "fa/fa_problem.h"

/* Workspace bytes of the joined copies (0 when Dr = 0). */
size_t fa_rope_join_bytes(const fa_problem *p, bool backward);
/* p with Dr folded into D, its joined views carved from `area`, which holds
 * fa_rope_join_bytes (NULL when only sizes are needed); p itself when Dr = 0. */
fa_problem fa_rope_join_problem(const fa_problem *p, bool backward, char *area);
/* Gathers p's q | qr and k | kr into j's joined views. */
void fa_rope_join_inputs(const fa_problem *p, const fa_problem *j);
/* Scatters j's joined dq and dk to p's dq | dqr and dk | dkr. */
void fa_rope_split_grads(const fa_problem *p, const fa_problem *j);

#endif
