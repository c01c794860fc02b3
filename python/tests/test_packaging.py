"""The package's two bindings: attnops.golden works on numpy arrays where torch cannot be imported,
and the torch ops refuse, with a sentence, a torch other than the one they were built for."""
import subprocess
import sys
import textwrap

import pytest


def run_python(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)


GOLDEN_WITHOUT_TORCH = '''
    import sys
    sys.modules["torch"] = None  # any "import torch" now raises ImportError
    import numpy as np
    import attnops, attnops.golden
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 5, 2, 8)).astype(np.float32) for _ in range(3))
    out, smax, ssum = attnops.golden.flash_attention_score(q, k, v, 2, "BSND", scale=0.25)
    s = np.einsum("bqnd,bknd->bnqk", q.astype(np.float64), k) * 0.25
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("bnqk,bknd->bqnd", p / p.sum(-1, keepdims=True), v)
    assert np.abs(out - ref).max() < 1e-6, np.abs(out - ref).max()
    print(attnops.compare(out, ref.astype(np.float32), rule="dual").passed)
'''


def test_golden_works_without_torch():
    run = run_python(GOLDEN_WITHOUT_TORCH)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"


@pytest.mark.parametrize("built, words", [
    ("1.0.0", "the torch ops were built for torch 1.0.0, but torch "),
    ("", "this installation was built without torch"),
])
def test_torch_ops_refuse_another_torch(built, words):
    run = run_python(f'''
        import attnops._build_info as info
        info.TORCH_VERSION = {built!r}
        try:
            import attnops.ops
        except ImportError as exc:
            print(exc)
        else:
            print("loaded")
    ''')
    assert run.returncode == 0, run.stderr
    assert words in run.stdout and "pip install --no-build-isolation" in run.stdout


def test_the_check_fails_when_it_should():
    """The golden check above catches a wrong output (its reference is not vacuous)."""
    run = run_python(GOLDEN_WITHOUT_TORCH.replace("scale=0.25)", "scale=0.5)"))
    assert run.returncode != 0 and "AssertionError" in run.stderr
