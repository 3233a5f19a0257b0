"""The peer of bench/train_step.py: one ELECTRA pretraining step with Hugging Face's PyTorch classes.

Runs in its own Python environment (torch + transformers, see bench/requirements.txt), started by
`bench/train_step.py --peer=hf`; it needs nothing from electra_tf. It can also be run by hand:

    /work/venv-bench/bin/python bench/peer_hf_step.py --spec SPEC.json [--steps 10 --warmup 3]

SPEC.json (written by train_step.py) holds the discriminator and generator configs (BERT keys),
the special token ids, the masking / loss / optimizer hparams and the path of an .npz with the
batch (input_ids, input_mask, segment_ids, int32 [B, L]).

The step follows the original ELECTRA (and electra_tf): the generator is `ElectraForMaskedLM`
(hidden 64, 1 head, FFN 256, 12 layers for ELECTRA-small) sharing the discriminator's whole
embeddings module (word/position/type tables and their LayerNorm) and using the word table as its
tied output projection; the discriminator is `ElectraForPreTraining`. Masking: N = int((p+0.005)·L)
slots drawn uniformly with replacement over the non-special real tokens, the first
max(1, min(N, round(p·len))) used, 85% of them replaced by [MASK]. The generator's MLM head runs on
the N gathered positions only (as the original; HF's stock forward would run it on all L).
Replacements are Gumbel-max samples from the generator's logits (no gradient). Loss
1·MLM + 50·discriminator BCE over real tokens; AdamW (no decay on LayerNorm / bias, eps 1e-6),
global-norm clipping at 1.0; dropout 0.1 in both networks. float32, or the spec's
"precision" mixed_bfloat16 / mixed_float16 as `torch.autocast` of the forward pass (weights and
optimizer in float32, as Keras's mixed precision).

Modes: by default runs `--warmup` then `--steps` steps and prints one JSON line. With `--serve`
it prints {"ready": ...} after setting up, then answers stdin lines "run N" with one JSON line
of N step times, until "quit": so that the caller can alternate our step and this one; "profile N"
runs N steps under torch.profiler and answers the ops' self times by region (bench/profile_step.py).
The step's parts run in `record_function` regions ("electra/masking", "electra/generator",
"electra/generator_head", "electra/sampling", "electra/discriminator",
"electra/discriminator_loss", "electra/optimizer"), which cost nothing unprofiled.
"""

import argparse
import json
import statistics
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", required=True, help="JSON spec written by bench/train_step.py")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--serve", action="store_true", help="answer 'run N' lines on stdin")
    return p.parse_args(argv)


def build(spec, torch, transformers):
    def electra_config(d):
        return transformers.ElectraConfig(
            vocab_size=d["vocab_size"],
            embedding_size=d["embedding_size"],
            hidden_size=d["hidden_size"],
            num_hidden_layers=d["num_hidden_layers"],
            num_attention_heads=d["num_attention_heads"],
            intermediate_size=d["intermediate_size"],
            hidden_act="gelu",
            hidden_dropout_prob=d["hidden_dropout_prob"],
            attention_probs_dropout_prob=d["attention_probs_dropout_prob"],
            max_position_embeddings=d["max_position_embeddings"],
            type_vocab_size=d["type_vocab_size"],
            initializer_range=d["initializer_range"],
            layer_norm_eps=1e-12,
        )

    torch.manual_seed(spec.get("seed", 0))
    disc = transformers.ElectraForPreTraining(electra_config(spec["disc"]))
    gen = transformers.ElectraForMaskedLM(electra_config(spec["gen"]))
    # tie: the generator uses the discriminator's embeddings module and word table as its output
    gen.electra.embeddings = disc.electra.embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    disc.train()
    gen.train()

    params, seen = [], set()
    for module in (disc, gen):
        for name, p in module.named_parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append((name, p))
    no_decay = [p for n, p in params if "LayerNorm" in n or n.endswith("bias")]
    decay = [p for n, p in params if not ("LayerNorm" in n or n.endswith("bias"))]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": spec["weight_decay_rate"]},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=spec["learning_rate"],
        betas=(0.9, 0.999),
        eps=1e-6,
    )
    all_params = [p for _, p in params]
    return disc, gen, opt, all_params


def make_step(spec, torch, disc, gen, opt, all_params):
    F = torch.nn.functional
    n = int(spec["max_predictions"])
    special = spec["special_ids"]
    mask_prob = float(spec["mask_prob"])
    gen_weight = float(spec["gen_weight"])
    disc_weight = float(spec["disc_weight"])
    clip = float(spec["clip_norm"])
    temperature = float(spec["temperature"])
    accum = int(spec.get("gradient_accumulation_steps", 1))

    label = torch.profiler.record_function  # regions bench/profile_step.py groups ops by

    def losses(input_ids, input_mask, segment_ids, mlm_den, disc_den):
        with label("electra/masking"):
            positions, weights, targets, masked_ids = mask(input_ids, input_mask)
        with label("electra/generator"):
            gen_hidden = gen.electra(
                masked_ids, attention_mask=input_mask, token_type_ids=segment_ids
            ).last_hidden_state
        with label("electra/generator_head"):
            logits, mlm_loss = generator_head(gen_hidden, positions, weights, targets, mlm_den)
        with torch.no_grad(), label("electra/sampling"):
            fake, labels = replaced_tokens(input_ids, logits, positions, weights)
        with label("electra/discriminator"):
            disc_logits = disc(
                fake, attention_mask=input_mask, token_type_ids=segment_ids
            ).logits  # [B, L]
        with label("electra/discriminator_loss"):
            tok_w = input_mask.float()
            bce = F.binary_cross_entropy_with_logits(disc_logits, labels, reduction="none")
            disc_loss = (bce * tok_w).sum() / (disc_den + 1e-6)
            return gen_weight * mlm_loss + disc_weight * disc_loss

    def mask(input_ids, input_mask):
        b = input_ids.shape[0]
        cand = input_mask.bool()
        for t in (special["cls"], special["sep"], special["mask"]):
            cand &= input_ids != t
        probs = cand.float() + 1e-9 * (~cand).float()  # uniform over candidates
        positions = torch.multinomial(probs, n, replacement=True)  # [B, N]
        num = torch.clamp(torch.round(input_mask.sum(-1).float() * mask_prob), 1, n).long()
        weights = (torch.arange(n)[None, :] < num[:, None]).float()  # [B, N]
        positions = positions * weights.long()
        targets = torch.gather(input_ids, 1, positions)
        use_mask = (torch.rand(b, n) < 0.85) & (weights > 0)
        masked_ids = input_ids.clone()
        masked_ids.scatter_(
            1, positions, torch.where(use_mask, special["mask"], targets)
        )  # slot 0 ([CLS]) rewritten with itself in unused slots
        masked_ids[:, 0] = input_ids[:, 0]
        return positions, weights, targets, masked_ids

    def generator_head(gen_hidden, positions, weights, targets, mlm_den):
        b = gen_hidden.shape[0]
        idx = positions[:, :, None].expand(-1, -1, gen_hidden.shape[-1])
        gathered = torch.gather(gen_hidden, 1, idx)  # [B, N, H]
        logits = gen.generator_lm_head(gen.generator_predictions(gathered))  # [B, N, V]
        nll = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
        ).reshape(b, n)
        return logits, (nll * weights).sum() / (mlm_den + 1e-6)

    def replaced_tokens(input_ids, logits, positions, weights):
        u = torch.rand(logits.shape)
        gumbel = -torch.log(-torch.log(u + 1e-9) + 1e-9)
        sampled = torch.argmax(logits.float() / temperature + gumbel, -1)
        fake = input_ids.clone()
        upd = torch.where(weights > 0, sampled, input_ids[:, :1].expand(-1, n))
        fake.scatter_(1, positions, upd)
        fake[:, 0] = input_ids[:, 0]
        return fake, (fake != input_ids).float()

    autocast = {"mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}.get(
        spec.get("precision", "float32")
    )

    def step(batch):
        input_ids, input_mask, segment_ids = batch
        num = torch.clamp(torch.round(input_mask.sum(-1).float() * mask_prob), 1, n)
        mlm_den, disc_den = num.sum(), input_mask.float().sum()
        with label("electra/optimizer"):
            opt.zero_grad(set_to_none=True)
        total = 0.0
        for ids, m, s in zip(
            input_ids.chunk(accum), input_mask.chunk(accum), segment_ids.chunk(accum)
        ):
            with torch.autocast("cpu", dtype=autocast or torch.float32, enabled=bool(autocast)):
                loss = losses(ids, m, s, mlm_den, disc_den)
            loss.backward()
            total += float(loss.detach())
        with label("electra/optimizer"):
            torch.nn.utils.clip_grad_norm_(all_params, clip)
            opt.step()
        return total

    return step


def op_region(event, forward_of):
    """(the innermost "electra/..." region, the autograd node) an op ran under: for an op of the
    backward pass, the region of the forward op that created its node (same sequence_nr)."""
    node, e = None, event
    while e is not None:
        if e.name.startswith("electra/"):
            return e.name, node
        if e.name.startswith("autograd::engine::evaluate_function: ") and node is None:
            node = e.name.split(": ", 1)[1]
            fwd = forward_of.get(e.sequence_nr)
            if fwd is not None:
                return op_region(fwd, {})[0], node
        e = e.cpu_parent
    return "", node


def profile(run, k, torch):
    """k steps under torch.profiler (record_shapes): one record per (op, region, autograd node,
    input shapes) with its self CPU time in microseconds summed over the steps, and the steps'
    wall time."""
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    ) as prof:
        times, _ = run(k)
    events = list(prof.events())
    forward_of = {}  # sequence_nr -> the forward op that recorded it (the outermost one)
    for e in events:
        if e.sequence_nr >= 0 and not e.name.startswith("autograd::"):
            forward_of.setdefault(e.sequence_nr, e)
    ops = {}
    for e in events:
        if e.self_cpu_time_total <= 0 or e.name.startswith("electra/"):
            continue
        region, node = op_region(e, forward_of)
        key = (e.name, region, node or "", json.dumps(e.input_shapes))
        rec = ops.setdefault(key, [0.0, 0])
        rec[0] += e.self_cpu_time_total
        rec[1] += 1
    records = [
        {"name": n, "region": r, "node": nd, "shapes": json.loads(sh), "self_us": t, "count": c}
        for (n, r, nd, sh), (t, c) in ops.items()
    ]
    return {"ops": records, "step_times": times}


def main(argv=None):
    args = parse_args(argv)
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(args.threads)
    except RuntimeError:
        pass
    with open(args.spec, encoding="utf-8") as f:
        spec = json.load(f)
    data = np.load(spec["batch_file"])
    batch = tuple(
        torch.from_numpy(data[k].astype(np.int64))
        for k in ("input_ids", "input_mask", "segment_ids")
    )
    disc, gen, opt, all_params = build(spec, torch, transformers)
    step = make_step(spec, torch, disc, gen, opt, all_params)
    info = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in all_params),
    }

    def run(k):
        times, loss = [], None
        for _ in range(k):
            t0 = time.perf_counter()
            loss = step(batch)
            times.append(time.perf_counter() - t0)
        return times, loss

    if args.serve:
        print(json.dumps({"ready": True, **info}), flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "quit":
                break
            if cmd[0] == "profile":
                print(json.dumps(profile(run, int(cmd[1]), torch)), flush=True)
                continue
            times, loss = run(int(cmd[1]))
            print(json.dumps({"step_times": times, "loss": loss}), flush=True)
        return
    run(args.warmup)
    times, loss = run(args.steps)
    med = statistics.median(times)
    b, length = batch[0].shape
    out = {
        "seq_per_s": b / med,
        "tokens_per_s": b * length / med,
        "step_s_median": med,
        "step_times": times,
        "loss": loss,
        **info,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
