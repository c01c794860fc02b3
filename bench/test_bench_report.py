"""bench/bench_report.py on rounds written here: medians over rounds, ratios taken within a round and
then their median (never a ratio of medians), the ratios between cases, the markdown and the docs
update.  Run by ctest (bench_report) with pytest."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402


def case(name, direction="bwd", mask="none", keep=0, dtype="f32", **kw):
    """A descriptor as bench_fa --list-cases --json writes it: the mask tag
    and the sparse_mode, pre, next it stands for."""
    half = int(mask[4:]) // 2 if mask.startswith("band") else 0
    mode = {"none": 0, "mask1": 1, "causal2": 2, "causal3": 3}.get(mask, 4)
    c = dict(name=name, B=1, N1=8, N2=8, S1=4096, S2=4096, D=128, Dv=128, dtype=dtype, layout="BNSD",
             dir=direction, mask=mask, pse="none", peer=True, varlen=0, varlen_dense=0, keep=keep, det=0,
             sparse_mode=mode, pre=half, next=half)
    c.update(kw)
    return c


CASES = [case("dense"), case("causal", mask="causal2"), case("drop", keep=0.9)]


def write_run(tmp_path, attnops_rounds, torch_rounds=()):
    rounds = tmp_path / "rounds"
    rounds.mkdir()
    for r, body in enumerate(attnops_rounds, 1):
        (rounds / f"attnops.{r}.json").write_text(json.dumps(body))
    for r, body in enumerate(torch_rounds, 1):
        (rounds / f"torch.{r}.json").write_text(json.dumps(body))
    (tmp_path / "cases.json").write_text(json.dumps(CASES))
    return bench_report.parse_args(["--out", str(tmp_path), "--cases", str(tmp_path / "cases.json"),
                                    "--threads", "2", "--git", "abc1234", "--cpu", "Test CPU"])


def attnops_round(dense, causal, drop, peak=100.0):
    r = {"attnops_version": "0.1.0", "attnops_isa": "avx2", "gemm_peak_f32_gflops": peak}
    for n, ms in (("dense", dense), ("causal", causal), ("drop", drop)):
        r[f"{n}_ms_median"] = r[f"{n}_ms_min"] = ms
    r["causal_unmasked_fraction"] = 0.5
    return r


def torch_round(dense, causal, drop):
    r = {"torch_version": "2.x", "torch_threads": 2, "torch_cpu_capability": "AVX2"}
    for n, ms in (("dense", dense), ("causal", causal), ("drop", drop)):
        r[f"torch_{n}_ms_median"] = r[f"torch_{n}_ms_min"] = ms
    return r


def test_medians_and_per_round_ratios(tmp_path):
    # Round 2 is slow for both programs (a noisy neighbour).  dense's speedups within the rounds are
    # 1.5, 3 and 4, median 3; the ratio of the two medians (200 / 100) would say 2.
    args = write_run(tmp_path, [attnops_round(100, 60, 110), attnops_round(400, 240, 440), attnops_round(50, 30, 55)],
                     [torch_round(150, 120, 300), torch_round(1200, 480, 1200), torch_round(200, 60, 150)])
    text = bench_report.report(args)
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["rounds"] == 3 and res["torch_rounds"] == 3 and res["git_commit"] == "abc1234"
    assert res["dense_ms_median"] == 100 and res["torch_dense_ms_median"] == 200
    assert res["dense_speedup_vs_torch"] == pytest.approx(3.0)
    assert res["bwd_f32_causal2_ratio_vs_dense"] == pytest.approx(0.6)
    assert res["bwd_f32_keep90_ratio_vs_no_dropout"] == pytest.approx(1.1)
    assert res["bwd_f32_keep90_speedup_vs_torch"] == pytest.approx(300 / 110)
    gflop = 2.5 * 2.0 * 8 * 4096 * 4096 * 256 * 1e-9
    assert res["dense_gflop"] == pytest.approx(gflop) and res["dense_gflops"] == pytest.approx(gflop / 0.1)
    assert "| `bwd_f32_causal2_ratio_vs_dense` | 0.600 | time / time of `dense` | ≤ 0.55 |" in text
    assert "torch 2.x (2 threads, AVX2)." in text
    assert (tmp_path / "results.md").read_text() == text


def test_without_torch(tmp_path):
    args = write_run(tmp_path, [attnops_round(100, 60, 110)])
    text = bench_report.report(args)
    res = json.loads((tmp_path / "results.json").read_text())
    assert "torch: not run." in text and "torch_rounds" not in res and "dense_speedup_vs_torch" not in res
    assert "| `dense` | 100.00 |" in text and "| – | – | – |" in text


def test_quick_runs_say_so(tmp_path):
    args = write_run(tmp_path, [attnops_round(100, 60, 110)])
    args.quick = True
    assert "quick mode (S/8)" in bench_report.report(args)


def test_bases_and_labels(tmp_path):
    cases = [case("a", mask="band1024"), case("b", varlen=32, layout="TND"), case("c", det=1), case("d"),
             case("e", mask="band1024", dtype="bf16")]
    (tmp_path / "c.json").write_text(json.dumps(cases))
    cases = bench_report.read_cases(str(tmp_path / "c.json"), [])
    assert bench_report.label(cases[0], cases) == "bwd_f32_band1024"
    assert bench_report.band_width(cases[0]) == 1024 and bench_report.band_width(cases[3]) is None
    assert bench_report.base_of(cases[0], cases) is cases[3]
    assert bench_report.base_of(cases[4], cases) is None  # no bf16 case without the mask
    assert bench_report.variant_base(cases[2], cases) == (cases[3], "ratio_vs_default")
    assert bench_report.ratio_target(cases[0], "ratio_vs_proportional") == "≤ 1.2"


def test_read_cases_counts_flops_and_tags(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps([case("x", direction="fwd", keep=0.9, mask="causal3"),
                                                 case("v", varlen=32, layout="TND")]))
    got = bench_report.read_cases(str(tmp_path / "c.json"), [{"v_gflop": 12.5}])
    assert got[0]["tags"] == "_causal3_keep90" and got[0]["gflop"] == pytest.approx(2.0 * 8 * 4096 ** 2 * 256e-9)
    assert got[1]["tags"] == "_varlen32" and got[1]["gflop"] == 12.5  # bench_fa's count of the real work


def test_update_docs(tmp_path):
    doc = tmp_path / "PERFORMANCE.md"
    doc.write_text("intro\n<!-- BENCH-RESULTS:BEGIN -->\nold table\n<!-- BENCH-RESULTS:END -->\nafter\n")
    assert "updated" in bench_report.update_docs(str(doc), "new table\n")
    assert doc.read_text() == "intro\n<!-- BENCH-RESULTS:BEGIN -->\nnew table\n<!-- BENCH-RESULTS:END -->\nafter\n"
    doc.write_text("no markers\n")
    assert "not updated" in bench_report.update_docs(str(doc), "x")
    assert doc.read_text() == "no markers\n"


def test_softcap_against_the_uncapped_case(tmp_path):
    """A softcap case takes the same case uncapped as its base (never a dropout case), and no other
    variant takes a softcap case as its base."""
    cases = [case("cap", softcap=50.0), case("plain"), case("capdrop", keep=0.9, softcap=50.0), case("drop", keep=0.9),
             case("fwdcap", direction="fwd", dtype="bf16", softcap=50.0)]
    (tmp_path / "c.json").write_text(json.dumps(cases))
    cases = bench_report.read_cases(str(tmp_path / "c.json"), [])
    assert bench_report.label(cases[0], cases) == "bwd_f32_softcap50"
    assert bench_report.variant_base(cases[0], cases) == (cases[1], "ratio_vs_no_softcap")
    assert bench_report.variant_base(cases[2], cases) == (cases[3], "ratio_vs_no_softcap")
    assert bench_report.variant_base(cases[3], cases) == (cases[1], "ratio_vs_no_dropout")
    assert bench_report.variant_base(cases[4], cases) == (None, None)
    assert bench_report.base_of(cases[0], cases) is None
    assert bench_report.ratio_target(cases[0], "ratio_vs_no_softcap") == "≤ 1.15"


def test_infer_attention_rows(tmp_path):
    """FusedInferAttentionScore's rounds: speed-ups and the ratios between its cases taken within each round,
    then their median; its table in the markdown."""
    args = write_run(tmp_path, [attnops_round(100, 60, 110)])
    rounds = tmp_path / "rounds"
    times = ({"decode_bf16": 4.0, "decode_int8": 2.0, "decode_paged_bf16": 4.4}, {"decode_bf16": 8.0,
             "decode_int8": 8.0, "decode_paged_bf16": 8.0}, {"decode_bf16": 3.0, "decode_int8": 2.0,
                                                             "decode_paged_bf16": 3.3})
    rates = ({"prompt_bf16": 200.0, "chunk_paged_bf16": 180.0}, {"prompt_bf16": 100.0, "chunk_paged_bf16": 50.0},
             {"prompt_bf16": 160.0, "chunk_paged_bf16": 152.0})  # within-round 0.9, 0.5, 0.95
    for r, (t, g) in enumerate(zip(times, rates), 1):
        body = {"copy_gbps": 30.0}
        for name, ms in t.items():
            body.update({f"fia_{name}_ms_median": ms, f"fia_{name}_pct_copy_bw": 50.0})
        body.update({f"fia_{name}_gflops": v for name, v in g.items()})
        (rounds / f"fia_attnops.{r}.json").write_text(json.dumps(body))
        (rounds / f"fia_torch.{r}.json").write_text(json.dumps({"torch_fia_decode_bf16_ms_median": 10 * r}))
    text = bench_report.report(args)
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["fia_bf16_vs_int8"] == pytest.approx(1.5)  # within-round 2, 1, 1.5
    assert res["fia_paged_vs_contiguous"] == pytest.approx(1.1)
    assert res["fia_decode_bf16_speedup_vs_torch"] == pytest.approx(2.5)  # 2.5, 2.5, 10
    assert res["fia_chunk_vs_prompt_rate"] == pytest.approx(0.9)  # the median of the within-round ratios
    assert res["fia_chunk_paged_bf16_gflops"] == pytest.approx(152.0)
    assert "| `fia_decode_bf16` |" in text and "| `fia_spec4_vs_decode` |" in text
    rate_row = ("| `fia_chunk_vs_prompt_rate` | GFLOP/s of `fia_chunk_paged_bf16` / GFLOP/s of `fia_prompt_bf16` "
                "| 0.90 |")
    assert rate_row in text


def test_infer_attention_avx2_rows(tmp_path):
    """The AVX2 path's decode rounds (part fia_avx2): their own table, results under fia_avx2_*, their speed-ups
    against torch's AVX2 rounds and the paged ratio; no row for a case they do not run, none in the AVX-512
    table."""
    args = write_run(tmp_path, [attnops_round(100, 60, 110)])
    rounds = tmp_path / "rounds"
    for r, (ms, paged, torch_ms) in enumerate(((4.0, 4.4, 40.0), (5.0, 5.0, 20.0), (3.0, 3.6, 33.0)), 1):
        body = {"copy_gbps": 28.0, "fia_decode_bf16_ms_median": ms, "fia_decode_paged_bf16_ms_median": paged,
                "fia_decode_bf16_pct_copy_bw": 60.0 + r}
        (rounds / f"fia_avx2_attnops.{r}.json").write_text(json.dumps(body))
        (rounds / f"fia_avx2_torch.{r}.json").write_text(json.dumps({"torch_fia_decode_bf16_ms_median": torch_ms}))
    text = bench_report.report(args)
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["fia_avx2_decode_bf16_ms_median"] == pytest.approx(4.0)
    assert res["fia_avx2_decode_bf16_pct_copy_bw"] == pytest.approx(62.0)
    assert res["fia_avx2_decode_bf16_speedup_vs_torch"] == pytest.approx(10.0)  # 10, 4, 11
    assert res["fia_avx2_paged_vs_contiguous"] == pytest.approx(1.1)  # 1.1, 1.0, 1.2
    assert res["fia_avx2_copy_gbps"] == pytest.approx(28.0)
    assert "fia_decode_bf16_ms_median" not in res and "fia_avx2_mla_bf16_ms_median" not in res
    assert "| FusedInferAttentionScore, AVX2 path |" in text and "| `fia_avx2_decode_bf16` |" in text
    assert "`fia_avx2_spec4_vs_decode`" not in text and "`fia_avx2_prompt_vs_fa_forward`" not in text


def test_ratio_rows_differing_only_in_dtype_merge(tmp_path):
    """The f32 and bf16 rows of one ratio become one row, `bwd_{f32,bf16}_causal2_ratio_vs_dense`, with both medians
    in that order; results.json keeps one key per dtype, and a ratio only one dtype has keeps its own row."""
    cases = [case("bwd_f32_plain"), case("bwd_f32_causal", mask="causal2"), case("bwd_bf16_plain", dtype="bf16"),
             case("bwd_bf16_causal", mask="causal2", dtype="bf16"), case("bwd_bf16_det", dtype="bf16", det=1)]
    ms = {"bwd_f32_plain": 100, "bwd_f32_causal": 60, "bwd_bf16_plain": 50, "bwd_bf16_causal": 25, "bwd_bf16_det": 55}
    args = write_run(tmp_path, [{f"{n}_ms_median": v for n, v in ms.items()}])
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    text = bench_report.report(args)
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["bwd_f32_causal2_ratio_vs_dense"] == pytest.approx(0.6)
    assert res["bwd_bf16_causal2_ratio_vs_dense"] == pytest.approx(0.5)
    merged = ("| `bwd_{f32,bf16}_causal2_ratio_vs_dense` | 0.600, 0.500 | time / time of `bwd_{f32,bf16}_plain` "
              "| ≤ 0.55 |")
    assert merged in text.splitlines()
    assert "| `bwd_bf16_det_ratio_vs_default` | 1.100 | time / time of `bwd_bf16_plain` | ≤ 1.10 |" in text.splitlines()
    assert "`bwd_f32_causal2_ratio_vs_dense`" not in text
