"""Positional calls of the torch ops by argument name, with the positions read from the registered schema.

The fast paths call an op by position, passing arguments only up to the last that differs from its default
(torch's parser takes ~0.05 us a positional argument and ~0.35 us a keyword).  The positions are the C++
binding's (python/csrc: one Arg list per op), so no wrapper writes a number down: it names the arguments it
passes, and positional_counts, read once at import from the op's schema, says how many positional arguments a
call passes to reach each name.  The wrapper's argument tuple follows the schema's order; that order is
checked here at import, so a reordered C++ list makes the import fail instead of binding values to the wrong
names.  (Reordering the tuple at each call, with an itemgetter made from the schema, would cost ~0.1-0.15 us,
some 5% of a tiny call.)"""


def positions(op):
    """{argument name: position} in the registered schema of op (an OpOverload, torch.ops.attnops.<op>.default)."""
    return {arg.name: i for i, arg in enumerate(op._schema.arguments)}


def positional_counts(op, names):
    """{name: the number of positional arguments that passes it} for a wrapper that calls `op` with the values of
    `names` by position, in that order.  ImportError unless `names` are the schema's first arguments, in its
    order."""
    pos = positions(op)
    if list(pos)[:len(names)] != list(names):
        raise ImportError(f"attnops: {op._schema.name}'s schema starts ({', '.join(list(pos)[:len(names)])}), "
                          f"not ({', '.join(names)}) as its positional call passes them")
    return {name: pos[name] + 1 for name in names}
