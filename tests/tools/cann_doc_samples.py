"""Extracts the sample program ("调用示例") of each FlashAttention aclnn entry
point from a checkout of CANN's ops-transformer, one unchanged .cpp per entry
point, so that the test suite can build and run them against libattnops_acl
(cmake -DATTNOPS_OPS_TRANSFORMER_DIR=...; tests/acl.cmake).

The samples are CANN's, under the CANN Open Software License, and stay in the
user's checkout and build tree: attnops does not carry them (docs/ACL.md).

    cann_doc_samples.py OPS_TRANSFORMER_DIR OUT_DIR
"""
import pathlib
import re
import sys

ENTRY_POINTS = {
    "flash_attention_score": ["aclnnFlashAttentionScore", "aclnnFlashAttentionScoreV2",
                              "aclnnFlashAttentionVarLenScore", "aclnnFlashAttentionVarLenScoreV2"],
    "flash_attention_score_grad": ["aclnnFlashAttentionScoreGrad", "aclnnFlashAttentionScoreGradV2",
                                   "aclnnFlashAttentionUnpaddingScoreGrad",
                                   "aclnnFlashAttentionUnpaddingScoreGradV2"],
}
SECTION = "## 调用示例"
# The first C++ fence of the section; the docs indent it under a list item.
FENCE = re.compile(r"\n(?P<indent>[ \t]*)```[cC]\+\+[ \t]*\n(?P<body>.*?)\n[ \t]*```", re.S)


def sample_of(doc: pathlib.Path) -> str:
    """The sample program of one entry point's page, with the page's indent removed."""
    text = doc.read_text(encoding="utf-8")
    start = text.find(SECTION)
    if start < 0:
        raise ValueError(f"{doc}: no '{SECTION}' section")
    match = FENCE.search(text, start)
    if not match or "main(" not in match.group("body"):
        raise ValueError(f"{doc}: the '{SECTION}' section has no C++ program")
    indent = match.group("indent")
    lines = [line[len(indent):] if line.startswith(indent) else line for line in match.group("body").split("\n")]
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    root, out = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for op, entries in ENTRY_POINTS.items():
        for entry in entries:
            doc = root / "attention" / op / "docs" / f"{entry}.md"
            try:
                program = sample_of(doc)
            except (OSError, ValueError) as e:
                print(f"cann_doc_samples: {e}", file=sys.stderr)
                return 1
            (out / f"{entry}.cpp").write_text(program, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
