"""Large transformers by shape: ``--arch`` and the named presets of published models.

A :class:`LLM` is what the layout model (:mod:`kernels.layout`) needs of a dense or
mixture-of-experts decoder: depth, widths, heads, vocabulary, sequence, experts. It is the one
description of a transformer's shape: the data-parallel family's transformer profiles
(:class:`sweep.model.transformers.Transformer`) hold one too.
``--arch layers=96,hidden=12288,heads=96,seq=2048,vocab=51200`` builds one; the
presets (``LLMS``) are the public configurations of published models:

- ``gpt3-175b``: Brown et al., "Language Models are Few-Shot Learners" (NeurIPS 2020),
  Table 2.1; vocabulary 51200 and tied embeddings as Megatron-LM trains it (Narayanan
  et al., SC'21, Table 1).
- ``llama3-8b``, ``llama3-70b``, ``llama3-405b``: Llama Team, "The Llama 3 Herd of
  Models" (2024), Table 3 (layers, width, FFN, heads, KV heads, vocabulary 128256);
  sequence 8192 as the Megatron recipes train them.
- ``deepseek-v3-like``: DeepSeek-V3 Technical Report (2024), section 4.2: 61 layers,
  hidden 7168, 128 heads, 256 routed experts (top 8) of width 2048 and 1 shared, the
  first 3 layers dense (FFN 18432), vocabulary 129280, multi-head latent attention
  (query and KV compressions 1536 and 512, query-key heads of 128 + a shared rotary 64,
  value heads of 128): 671B parameters, 37B active, as published; one
  multi-token-prediction depth (section 2.2; ``num_nextn_predict_layers`` 1 in its published
  ``config.json``), which a run trains unless its recipe turns it off (``--mtp-layers``). "Like":
  its auxiliary-loss-free balancing and node-limited routing are not modelled.
- ``qwen3-30b-a3b``, ``qwen3-235b-a22b``: the Qwen3 Technical Report (2025), Table 2
  (layers, heads, KV heads, experts 128 with 8 active), widths from their published
  ``config.json`` (hidden 2048 / 4096, expert FFN 768 / 1536, head dimension 128).
- ``gpt-oss-120b``: OpenAI's gpt-oss model card (2025): 36 layers, hidden 2880, 64
  query and 8 KV heads of dimension 64, 128 experts (top 4) of width 2880.

Parameter counts (:meth:`LLM.parameters`) count the matrices, embeddings and norm
weights; the tests check each preset against its published size.
"""

import dataclasses

from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.layout_axes import AXES
from netsweep_jax.sweep.core.values import whole_number

MLPS = ("gelu", "swiglu")


@dataclasses.dataclass(frozen=True)
class LLM:
    """A decoder-only transformer.

    Attributes:
      layers, hidden, heads: depth, width, query heads.
      seq, vocab: tokens per sample, vocabulary size.
      ffn: dense feed-forward width (default 4 x hidden).
      kv_heads: key/value heads (grouped-query attention; default = heads).
      head_dim: width of a query-key head (default hidden / heads; MLA's includes its rotary part).
      v_head_dim: width of a value head (default head_dim).
      q_rank, kv_rank, rope_dim: multi-head latent attention (DeepSeek-V2/V3): the query's and the
        keys' and values' down-projection widths and the shared rotary key's width (0: plain attention).
      mlp: ``gelu`` (2 matrices) or ``swiglu`` (3).
      experts, top_k, expert_ffn, shared_experts: routed experts (0 = dense), experts per
        token, an expert's width (default ffn), always-active experts.
      moe_every, first_dense: every ``moe_every``-th layer after the first ``first_dense``
        is a mixture-of-experts layer.
      router_groups, group_topk: group-limited routing (Megatron-Core's --moe-router-num-groups and
        --moe-router-group-topk; DeepSeek-V3's node-limited routing): each token's experts come from
        ``group_topk`` of ``router_groups`` groups of consecutive experts (0: no limit). Only the flex
        dispatcher's traffic reads it (kernels.layout_communication.hierarchical_copies).
      tied: the output layer shares the token embedding.
      mtp_layers: multi-token-prediction depths the architecture declares (DeepSeek-V3's MTP modules:
        each an embedding of the next token, two norms, a 2h-to-h projection, one transformer layer and the
        shared output head; Megatron-Core's ``--mtp-num-layers``); 0: none. What a run trains is the sweep's
        ``mtp_layers`` setting, whose default this is. Not in :meth:`parameters` (published sizes exclude it).
      dropout: the model trains with dropout, whose masks are kept for the backward pass (default:
        GPT-style models with GELU do, as GPT-3 and Megatron-LM's GPT do; SwiGLU models of today's
        families (Llama, Qwen, DeepSeek, gpt-oss) train without: their recipes set attention and hidden
        dropout to 0).
      source: where the shape comes from.
    """

    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    v_head_dim: int = 0
    q_rank: int = 0
    kv_rank: int = 0
    rope_dim: int = 0
    mlp: str = "gelu"
    experts: int = 0
    top_k: int = 1
    expert_ffn: int = 0
    shared_experts: int = 0
    moe_every: int = 1
    first_dense: int = 0
    router_groups: int = 0
    group_topk: int = 0
    tied: bool = False
    dropout: bool | None = None
    mtp_layers: int = 0
    source: str = ""

    def __post_init__(self):
        for name in ("ffn", "kv_heads", "head_dim", "expert_ffn", "v_head_dim"):
            if getattr(self, name) == 0:
                default = {
                    "ffn": 4 * self.hidden,
                    "kv_heads": self.heads,
                    "head_dim": self.hidden // max(self.heads, 1),
                    "expert_ffn": self.ffn or 4 * self.hidden,
                    "v_head_dim": self.head_dim,
                }
                object.__setattr__(self, name, default[name])
        if self.dropout is None:
            object.__setattr__(self, "dropout", self.mlp == "gelu")

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        if self.experts == 0:
            return 0
        return max(0, (self.layers - self.first_dense + self.moe_every - 1) // self.moe_every)

    @property
    def matrices(self) -> int:
        return 3 if self.mlp == "swiglu" else 2

    def parameters(self) -> dict[str, float]:
        """Parameter counts: ``total``, ``active`` (per token), ``expert`` (routed experts)."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        v, out = self.kv_heads * self.v_head_dim, self.heads * self.v_head_dim
        # Q from h or through its latent; K and V from h or through theirs (plus the shared rotary key).
        query = h * self.q_rank + self.q_rank * q + self.q_rank if self.q_rank else h * q
        keys_values = (
            h * (self.kv_rank + self.rope_dim)
            + self.kv_rank * (kv - self.kv_heads * self.rope_dim + v)
            + self.kv_rank
            if self.kv_rank
            else h * (kv + v)
        )
        attention = query + keys_values + out * h + 2 * h
        dense_mlp = self.matrices * h * self.ffn
        expert = self.matrices * h * self.expert_ffn
        moe = self.moe_layers
        shared = moe * (self.shared_experts * expert + h * self.experts)
        routed = moe * self.experts * expert
        embeddings = self.vocab * h * (1 if self.tied else 2)
        body = self.layers * attention + (self.layers - moe) * dense_mlp + shared + h
        active = body + moe * self.top_k * expert + embeddings
        return {"total": body + routed + embeddings, "active": active, "expert": routed}

    def describe(self) -> str:
        """One line: size, shape, experts."""
        n = self.parameters()
        size = f"{n['total'] / 1e9:.1f}B" + (f" ({n['active'] / 1e9:.1f}B active)" if self.experts else "")
        moe = f", {self.experts} experts top-{self.top_k}" if self.experts else ""
        return (
            f"{size}: {self.layers} layers, hidden {self.hidden}, {self.heads} heads"
            f"{'' if self.kv_heads == self.heads else f' ({self.kv_heads} KV)'}, {self.mlp}{moe}, "
            f"seq {self.seq}, vocab {self.vocab}"
        )


LLMS = {
    "gpt3-175b": LLM(
        96,
        12288,
        96,
        2048,
        51200,
        tied=True,
        source="Brown et al. 2020, Table 2.1; Narayanan et al. SC'21, Table 1 (vocab 51200)",
    ),
    "llama3-8b": LLM(
        32,
        4096,
        32,
        8192,
        128256,
        ffn=14336,
        kv_heads=8,
        mlp="swiglu",
        source="Llama 3 Herd of Models 2024, Table 3",
    ),
    "llama3-70b": LLM(
        80,
        8192,
        64,
        8192,
        128256,
        ffn=28672,
        kv_heads=8,
        mlp="swiglu",
        source="Llama 3 Herd of Models 2024, Table 3",
    ),
    "llama3-405b": LLM(
        126,
        16384,
        128,
        8192,
        128256,
        ffn=53248,
        kv_heads=8,
        mlp="swiglu",
        source="Llama 3 Herd of Models 2024, Table 3",
    ),
    "deepseek-v3-like": LLM(
        61,
        7168,
        128,
        4096,
        129280,
        ffn=18432,
        head_dim=192,
        v_head_dim=128,
        q_rank=1536,
        kv_rank=512,
        rope_dim=64,
        mlp="swiglu",
        experts=256,
        top_k=8,
        expert_ffn=2048,
        shared_experts=1,
        first_dense=3,
        mtp_layers=1,
        # Node-limited routing: 8 groups, at most 4 a token (the report's section 2.1.2; its config.json's
        # n_group 8, topk_group 4; Megatron-Bridge's DeepSeekV3ModelProvider, 6725f70).
        router_groups=8,
        group_topk=4,
        source="DeepSeek-V3 Technical Report 2024, sections 4.2 and 2.2 (one multi-token-prediction depth)",
    ),
    "qwen3-30b-a3b": LLM(
        48,
        2048,
        32,
        4096,
        151936,
        ffn=6144,
        kv_heads=4,
        head_dim=128,
        mlp="swiglu",
        experts=128,
        top_k=8,
        expert_ffn=768,
        source="Qwen3 Technical Report 2025, Table 2",
    ),
    "qwen3-235b-a22b": LLM(
        94,
        4096,
        64,
        4096,
        151936,
        ffn=12288,
        kv_heads=4,
        head_dim=128,
        mlp="swiglu",
        experts=128,
        top_k=8,
        expert_ffn=1536,
        source="Qwen3 Technical Report 2025, Table 2",
    ),
    "gpt-oss-120b": LLM(
        36,
        2880,
        64,
        4096,
        201088,
        ffn=2880,
        kv_heads=8,
        head_dim=64,
        mlp="swiglu",
        experts=128,
        top_k=4,
        expert_ffn=2880,
        source="OpenAI gpt-oss model card 2025",
    ),
}

_INTEGER_KEYS = (
    "layers",
    "hidden",
    "heads",
    "seq",
    "vocab",
    "ffn",
    "kv_heads",
    "head_dim",
    "v_head_dim",
    "q_rank",
    "kv_rank",
    "rope_dim",
    "experts",
    "top_k",
    "expert_ffn",
    "shared_experts",
    "moe_every",
    "first_dense",
    "mtp_layers",
    "router_groups",
    "group_topk",
)
ARCH_KEYS = (*_INTEGER_KEYS, "mlp", "tied", "dropout")
REQUIRED = ("layers", "hidden", "heads", "seq", "vocab")
MAX_SIZE = 10**7  # any width, depth or count above this is a typo, not a model
POSITIVE = ("layers", "hidden", "heads", "seq", "vocab", "top_k", "moe_every")  # at least 1 where given


# The keys only a mixture-of-experts shape reads (router_groups and group_topk are checked against experts).
MOE_KEYS = ("top_k", "expert_ffn", "shared_experts", "moe_every", "first_dense")


def _check_arch_keys(values: dict[str, object]) -> None:
    """Refuse an --arch key the shape cannot read (a hunt, each priced or ignored in silence): a mixture-of-experts
    key without ``experts``; ``mtp_layers`` past --mtp-layers' range."""
    # a key at a dense shape's own value reads as none given
    dense = {f.name: f.default for f in dataclasses.fields(LLM)}
    moe = [k for k in MOE_KEYS if k in values and values[k] != dense[k]]
    if moe and not values.get("experts"):
        raise InputError(
            f"{moe[0]}={values[moe[0]]}: a mixture-of-experts key, and the shape gives no experts= (a dense shape "
            "reads none of them)",
            param="arch",
        )
    mtp, spec = values.get("mtp_layers"), AXES["mtp_layers"]
    if isinstance(mtp, int) and not spec.low <= mtp <= spec.high:
        raise InputError(
            f"mtp_layers={mtp}: must be from {spec.low:g} to {spec.high:g}, as --mtp-layers", param="arch"
        )


def parse_arch(text: str) -> LLM:
    """``layers=96,hidden=12288,heads=96,seq=2048,vocab=51200[,ffn=,kv_heads=,...]`` -> :class:`LLM`."""
    values: dict[str, object] = {}
    for item in str(text).split(","):
        # keys and words in any case, as every name is (mlp=GELU is gelu)
        key, sep, value = (part.strip().lower() for part in item.partition("="))
        if not sep or not key:
            raise InputError(
                f"{item.strip()!r}: write key=value, e.g. layers=96 (keys: {', '.join(ARCH_KEYS)})",
                param="arch",
            )
        if key not in ARCH_KEYS:
            raise InputError(f"{key!r} is not a key; keys: {', '.join(ARCH_KEYS)}", param="arch")
        if key in values:
            raise InputError(f"{key} is given twice", param="arch")
        if key == "mlp":
            if value not in MLPS:
                raise InputError(f"mlp={value}: must be one of {', '.join(MLPS)}", param="arch")
            values[key] = value
        elif key in ("tied", "dropout"):
            if value not in ("0", "1", "true", "false"):
                raise InputError(f"{key}={value}: must be 0 or 1", param="arch")
            values[key] = value in ("1", "true")
        else:
            size, low = whole_number(value), int(key in POSITIVE)
            if size is None or not low <= size <= MAX_SIZE:
                raise InputError(
                    f"{key}={value}: must be a whole number from {low} to {MAX_SIZE}", param="arch"
                )
            values[key] = size
    _check_arch_keys(values)
    missing = [k for k in REQUIRED if k not in values]
    if missing:
        raise InputError(
            f"{text!r}: missing {', '.join(missing)} (required: {', '.join(REQUIRED)})", param="arch"
        )
    hidden, heads = values["hidden"], values["heads"]
    assert isinstance(hidden, int) and isinstance(heads, int)  # whole numbers, read above
    uneven = uneven_heads(hidden, heads)
    if "head_dim" not in values and uneven:
        raise InputError(
            f"{uneven}; give head_dim= if the heads are narrower or wider than hidden / heads", param="arch"
        )
    arch = LLM(**values, source=f"--arch {text}")  # type: ignore[arg-type]
    check(arch)
    return arch


def uneven_heads(hidden: int, heads: int) -> str:
    """What is wrong where a shape without its own head width (``--arch`` without head_dim=, a runs file's shape
    columns) has heads that do not split ``hidden`` evenly; '' where they do (or where no heads are given: a
    rule of its own)."""
    return f"hidden={hidden} is not a multiple of heads={heads}" if heads > 0 and hidden % heads else ""


def check(arch: LLM) -> None:
    """Rules a shape must obey whatever the layout (layout rules are masked cells, not errors)."""
    if arch.heads % arch.kv_heads:
        raise InputError(f"heads={arch.heads} is not a multiple of kv_heads={arch.kv_heads}", param="arch")
    if arch.experts and not 1 <= arch.top_k <= arch.experts:
        raise InputError(f"top_k={arch.top_k}: must be from 1 to experts={arch.experts}", param="arch")
    if arch.rope_dim and not arch.kv_rank:
        raise InputError(f"rope_dim={arch.rope_dim}: a shared rotary key needs kv_rank (MLA)", param="arch")
    if arch.kv_rank and arch.rope_dim >= arch.head_dim:
        raise InputError(
            f"rope_dim={arch.rope_dim}: must be below head_dim={arch.head_dim} (MLA's head_dim includes it)",
            param="arch",
        )
    if arch.group_topk and not (arch.router_groups and arch.group_topk <= arch.router_groups):
        raise InputError(
            f"group_topk={arch.group_topk}: needs router_groups and must not exceed it", param="arch"
        )
    if arch.router_groups and (not arch.experts or arch.experts % arch.router_groups):
        raise InputError(
            f"router_groups={arch.router_groups}: must divide experts={arch.experts}", param="arch"
        )
    if arch.first_dense > arch.layers:
        raise InputError(f"first_dense={arch.first_dense} exceeds layers={arch.layers}", param="arch")


def resolve_llm(name: str) -> LLM:
    """A preset by name (case-insensitive)."""
    key = name.strip().lower()
    if key not in LLMS:
        raise InputError(
            f"{literal(repr(name))} is not a large-model preset; presets: {', '.join(LLMS)} (or use {{0}})",
            param="model",
            names=("arch",),
        )
    return LLMS[key]
