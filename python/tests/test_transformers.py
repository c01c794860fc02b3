"""attnops.transformers.register(): small random-init Llama, Mistral and Gemma 2 models with
attn_implementation="attnops" against the same weights under "sdpa" (Gemma 2: "eager", the path that
applies its attn_logit_softcapping) (fp32: logits within 1e-5 of the
largest, gradients likewise, greedy generate() the same tokens) and, in bf16, against a float64 run
(within sdpa's own distance to it).  The cases are the ones glue without the mask function or the
varlen dispatch gets wrong: left-padded batches, packed sequences (position_ids restarting at 0, checked
against each sequence run alone), sliding windows.

The float64 reference is "sdpa" (its math kernel in float64): transformers 5.25's "eager" in float64
turns the fully masked rows of a left-padded batch into NaN (finfo.min + finfo.min = -inf), which then
spread to every row through the padded keys."""
import copy

import pytest
import torch
from transformers import AutoModelForCausalLM, Gemma2Config, GptOssConfig, LlamaConfig, MistralConfig

import attnops.transformers

attnops.transformers.register()

RTOL = 1e-5  # of the largest |logit| (|gradient|): fp32 through two different attention kernels


def llama_config():
    return LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


def mistral_config():
    return MistralConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, sliding_window=8)


def pair(cfg, dtype=torch.float32):
    """(attnops model, sdpa model) with the same random weights (each its own config)."""
    sdpa = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation="sdpa").to(dtype)
    ours = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation="attnops").to(dtype)
    ours.load_state_dict(sdpa.state_dict())
    assert ours.config._attn_implementation == "attnops" and sdpa.config._attn_implementation == "sdpa"
    return ours, sdpa


def assert_rel(name, actual, expected, rtol=RTOL):
    err = (actual - expected).abs().max().item()
    scale = expected.abs().max().item()
    assert err <= rtol * scale, f"{name}: max |err| {err:.3g} > {rtol} x {scale:.3g}"


def left_padded(batch=3, length=40):
    ids = torch.randint(0, 128, (batch, length))
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1, :7] = 0
    mask[2, :25] = 0
    return ids, mask


@pytest.mark.parametrize("config", [llama_config, mistral_config])
def test_dense_and_padded_logits_match_sdpa(config):
    ours, sdpa = pair(config())
    ids, mask = left_padded()
    with torch.no_grad():
        assert_rel("dense logits", ours(ids).logits, sdpa(ids).logits)
        real = mask.bool()
        assert_rel("padded logits", ours(ids, attention_mask=mask).logits[real],
                   sdpa(ids, attention_mask=mask).logits[real])


@pytest.mark.parametrize("config", [llama_config, mistral_config])
def test_packed_sequences_do_not_attend_across_boundaries(config):
    """One row holding three sequences (position_ids 0.., 0.., 0..) equals each sequence run alone."""
    ours, sdpa = pair(config())
    lens = [15, 9, 20]
    ids = torch.randint(0, 128, (1, sum(lens)))
    pos = torch.cat([torch.arange(n) for n in lens]).unsqueeze(0)
    with torch.no_grad():
        packed = ours(ids, position_ids=pos).logits
        alone = torch.cat([sdpa(part).logits for part in ids.split(lens, dim=1)], dim=1)
    assert_rel("packed logits", packed, alone)


def test_sliding_window_is_applied():
    """Mistral's window of 8 over 40 tokens: equal to sdpa's sliding mask, and not to full attention."""
    ours, sdpa = pair(mistral_config())
    ids = torch.randint(0, 128, (2, 40))
    full = copy.deepcopy(mistral_config())
    full.sliding_window = None
    unwindowed = AutoModelForCausalLM.from_config(full, attn_implementation="sdpa")
    unwindowed.load_state_dict(sdpa.state_dict())
    with torch.no_grad():
        got = ours(ids).logits
        assert_rel("windowed logits", got, sdpa(ids).logits)
        assert (got - unwindowed(ids).logits).abs().max() > 1e-3, "the window made no difference"


def assert_padded_gradients_match(ours, ref, ids, mask):
    """The causal-LM loss of a left-padded batch: every parameter's gradient equal to ref's.  A pad query
    sees no key: eager gives it uniform weights over every key, flash-attn (and sdpa) zeros; the last pad
    position predicts the first real token, so that label is left out with the pads'."""
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, 1:].masked_fill_(mask[:, :-1] == 0, -100)
    for model in (ours, ref):
        model.train()
        model(ids, attention_mask=mask, labels=labels).loss.backward()
    grads = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        assert_rel(f"grad {name}", p.grad, grads[name].grad)


@pytest.mark.parametrize("config", [llama_config, mistral_config])
def test_gradients_match_sdpa(config):
    ours, sdpa = pair(config())
    assert_padded_gradients_match(ours, sdpa, *left_padded())


def test_generate_gives_sdpas_tokens():
    ours, sdpa = pair(llama_config())
    ids, mask = left_padded(length=24)
    with torch.no_grad():
        got = ours.generate(ids, attention_mask=mask, max_new_tokens=10, do_sample=False)
        want = sdpa.generate(ids, attention_mask=mask, max_new_tokens=10, do_sample=False)
    assert torch.equal(got, want)


def test_unpadded_generate_decodes_through_fia(monkeypatch):
    """Without padding every decode step reads the cache in place through FusedInferAttentionScore (counted
    here) and greedy generate() gives sdpa's tokens."""
    from attnops import ops
    calls = []
    real = ops.fused_infer_attention_score

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)
    monkeypatch.setattr(ops, "fused_infer_attention_score", spy)
    ours, sdpa = pair(llama_config())
    ids = torch.randint(0, ours.config.vocab_size, (2, 20), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        got = ours.generate(ids, max_new_tokens=8, do_sample=False)
        want = sdpa.generate(ids, max_new_tokens=8, do_sample=False)
    assert torch.equal(got, want)
    assert calls and all(shape[2] == 1 for shape in calls), "decode steps went through FusedInferAttentionScore"


def test_bf16_is_within_sdpas_distance_to_float64():
    """Both bf16 models round the same linear layers; the attention adds little.  attnops' largest and rms
    errors against the float64 run are within 1.25x / 1.1x of sdpa's."""
    ours, sdpa = pair(llama_config(), torch.bfloat16)
    ref = AutoModelForCausalLM.from_config(copy.deepcopy(llama_config()), attn_implementation="sdpa").double()
    ref.load_state_dict(sdpa.state_dict())
    ids, mask = left_padded(length=64)
    real = mask.bool()
    with torch.no_grad():
        want = ref(ids, attention_mask=mask).logits[real]
        errs = [(m(ids, attention_mask=mask).logits[real].double() - want) for m in (ours, sdpa)]
    (ours_max, sdpa_max), (ours_rms, sdpa_rms) = ([e.abs().max().item() for e in errs],
                                                  [e.pow(2).mean().sqrt().item() for e in errs])
    assert ours_max <= 1.25 * sdpa_max and ours_rms <= 1.1 * sdpa_rms, (ours_max, sdpa_max, ours_rms, sdpa_rms)


def test_compiled_model_matches_eager(inductor_cache_per_isa):
    ours, _ = pair(llama_config())
    ids, mask = left_padded()
    compiled = torch.compile(ours)
    with torch.no_grad():
        real = mask.bool()
        assert_rel("compiled padded logits", compiled(ids, attention_mask=mask).logits[real],
                   ours(ids, attention_mask=mask).logits[real])
        assert_rel("compiled dense logits", compiled(ids).logits, ours(ids).logits)


def gemma2_config(softcap=1.0):
    """Gemma 2: soft-capped attention (a cap of 1 with weights drawn 10x the default scale, so the cap
    changes the logits by half their size) and a sliding window of 8 on alternate layers."""
    return Gemma2Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
                        attn_logit_softcapping=softcap, sliding_window=8, max_position_embeddings=256,
                        initializer_range=0.2)


def gemma2_pair():
    """(attnops model, eager model): transformers' sdpa path has no soft-capping, eager computes it."""
    eager = AutoModelForCausalLM.from_config(gemma2_config(), attn_implementation="eager")
    ours = AutoModelForCausalLM.from_config(gemma2_config(), attn_implementation="attnops")
    ours.load_state_dict(eager.state_dict())
    return ours, eager


def test_gemma2_softcap_matches_eager():
    """Dense and left-padded logits and the gradients equal eager's; without the cap they would not."""
    ours, eager = gemma2_pair()
    uncapped = AutoModelForCausalLM.from_config(gemma2_config(None), attn_implementation="eager")
    uncapped.load_state_dict(eager.state_dict())
    ids, mask = left_padded()
    real = mask.bool()
    with torch.no_grad():
        got, want = ours(ids).logits, eager(ids).logits
        assert_rel("dense logits", got, want)
        assert (got - uncapped(ids).logits).abs().max() > 0.1 * want.abs().max(), "the cap made no difference"
        assert_rel("padded logits", ours(ids, attention_mask=mask).logits[real],
                   eager(ids, attention_mask=mask).logits[real])
    assert_padded_gradients_match(ours, eager, ids, mask)


def test_gemma2_generate_and_compile():
    ours, eager = gemma2_pair()
    ids, mask = left_padded(length=24)
    with torch.no_grad():
        got = ours.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
        assert torch.equal(got, eager.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False))
        assert_rel("compiled dense logits", torch.compile(ours)(ids).logits, ours(ids).logits)


def gpt_oss_pair():
    """GPT-OSS: learnable attention sinks (s_aux, one logit per head) on every layer, sliding-window layers
    between full ones, a mixture of experts; the sinks drawn ~ 2 N(0, 1) so that they take a real share.
    (attnops model, eager model): eager computes the sinks, sdpa has none."""
    cfg = GptOssConfig(vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4,
                       num_experts_per_tok=2, sliding_window=8, max_position_embeddings=128)
    eager = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation="eager").float()
    with torch.no_grad():
        for layer in eager.model.layers:
            layer.self_attn.sinks.normal_(0.0, 2.0)
    ours = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation="attnops").float()
    ours.load_state_dict(eager.state_dict())
    return ours, eager


def test_gpt_oss_sinks_match_eager():
    """Dense and left-padded logits, every gradient (the sinks' included) and greedy tokens equal eager's;
    with the sinks zeroed the logits would differ."""
    ours, eager = gpt_oss_pair()
    ids, mask = left_padded(length=24)
    real = mask.bool()
    with torch.no_grad():
        want = eager(ids).logits
        assert_rel("dense logits", ours(ids).logits, want)
        assert_rel("padded logits", ours(ids, attention_mask=mask).logits[real],
                   eager(ids, attention_mask=mask).logits[real])
        got = ours.generate(ids[:1], max_new_tokens=6, do_sample=False)
        assert torch.equal(got, eager.generate(ids[:1], max_new_tokens=6, do_sample=False))
        sinkless = copy.deepcopy(ours)
        for layer in sinkless.model.layers:
            layer.self_attn.sinks.zero_().sub_(1e4)
        assert (sinkless(ids).logits - want).abs().max() > 0.01 * want.abs().max(), "the sinks made no difference"
    assert_padded_gradients_match(ours, eager, ids, mask)
