"""bench_fa's case list is verify's case descriptor: every listed spec
re-parses to itself (also after --quick), the JSON descriptors carry the
same fields, and a spec the bench cannot run is refused by name (exit 2).

    python -m pytest bench/test_case_list.py   (BENCH_FA: the bench_fa binary)
"""
import json
import os
import subprocess

import pytest

BENCH_FA = os.environ.get("BENCH_FA", "")
assert os.access(BENCH_FA, os.X_OK), "BENCH_FA must name the bench_fa binary (ctest bench_case_list sets it)"


def listing(tmp_path, tag, *args):
    path = tmp_path / f"{tag}.json"
    out = subprocess.run([BENCH_FA, "--list-cases", "--json", str(path), *args], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    return out, json.loads(path.read_text())


@pytest.mark.parametrize("quick", [False, True])
def test_listing_reparses_to_itself(tmp_path, quick):
    specs, cases = listing(tmp_path, "first", *(["--quick"] if quick else []))
    assert len(specs) == len(cases) > 30
    again, recases = listing(tmp_path, "again", *[a for s in specs for a in ("--case", s)])
    assert again == specs and recases == cases
    for s, c in zip(specs, cases):
        assert s == c["spec"] and s.startswith(c["name"] + ":")


def test_descriptor_fields(tmp_path):
    _, cases = listing(tmp_path, "one", "--case", "B=1,N1=4,N2=2,S1=256,S2=512,D=64,Dv=32,dtype=bf16,layout=BSH,"
                       "mode=4,mask=compressed,pre=64,next=64,dir=bwd,peer=no")
    c, = cases
    assert c["name"] == "bwd_bf16_B1_N4_G2_S256x512_D64_Dv32_BSH_band128"
    assert (c["sparse_mode"], c["pre"], c["next"], c["mask"], c["peer"]) == (4, 64, 64, "band128", False)
    _, cases = listing(tmp_path, "tnd", "--case", "N1=2,N2=2,D=16,Dv=16,dtype=f32,layout=TND,seqs=3:5:8,dir=fwd")
    c, = cases
    assert (c["varlen"], c["S1"], c["B"]) == (3, 16, 1) and "seqs=3:5:8" in c["spec"]


@pytest.mark.parametrize("spec, words", [
    ("B=1,dtype=f32", "dir=fwd or dir=bwd"),
    ("B=1,S1=4x,dir=fwd", "cannot read"),
    ("B=1,pad=2,dir=fwd", "pad="),
    ("B=1,mode=5,mask=compressed,dir=fwd", "masks"),
    ("B=1,mode=4,mask=compressed,pre=2,next=3,dir=fwd", "symmetric"),
    ("B=1,pse=slopes_n,pse_type=3,dir=fwd", "pse"),
    ("B=1,keep=1,dir=fwd", "keep=P"),
    ("B=1,S1=64,S2=64,layout=TND,dir=fwd", "layout TND"),
    ("B=1,S1=4096,S2=4096,layout=TND,varlen=33,dir=fwd", "at most 32"),
    ("B=1,dtype=f8_e4m3fn,out=bf16,dir=fwd", "FP8"),
])
def test_refused_by_name(spec, words):
    r = subprocess.run([BENCH_FA, "--list-cases", "--case", spec], capture_output=True, text=True)
    assert r.returncode == 2 and words in r.stderr and spec in r.stderr
