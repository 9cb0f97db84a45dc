"""Transformer architectures: parameter tensors in Hugging Face order, and their work per token.

A :class:`Transformer` is a shape (:class:`~sweep.model.llms.LLM`, the one description of a
transformer both model families read) and the naming scheme of a reference model; it produces
every parameter tensor, in the order ``model.named_parameters()`` gives them for the Hugging
Face (or torchvision) model named in ``source``, each with its shape and the forward work it drives:

- ``flops``: forward FLOPs per token of the matrix products that read this tensor
  (2 x its elements for a weight applied to every token; the attention score and
  context products, 4 x seq_len x hidden per token and layer, are charged to the
  layer's output projection);
- ``act``: activation elements per token that the layer's memory-bound ops (layer
  norms, softmax, GELU/SiLU, residual adds) read and write.

Families (``FAMILIES``): ``bert`` (BertModel with pooler, as bert-base-uncased),
``gpt2`` (GPT2LMHeadModel: the head is tied to the token embedding, so it adds no
tensor), ``vit`` (torchvision vit_b_16 with its 1000-class head), ``llama``
(LlamaForCausalLM: RMSNorm, SwiGLU, grouped-query attention, untied head unless
``tied``). Built-ins (``TRANSFORMERS``) cover BERT base/large, GPT-2 124M to 1.5B,
ViT-B/16, and Llama shapes of the 1B class (Llama 3.2 1B) and 7B class (Llama 2 7B).
"""

import dataclasses
import math

from netsweep_jax.sweep.model.llms import LLM


@dataclasses.dataclass(frozen=True)
class Tensor:
    """One parameter tensor: name, shape, forward FLOPs and activation elements per token."""

    name: str
    shape: tuple[int, ...]
    flops: float = 0.0
    act: float = 0.0

    @property
    def numel(self) -> int:
        """Elements of the tensor."""
        return math.prod(self.shape)


@dataclasses.dataclass(frozen=True)
class Transformer:
    """A reference model's parameter list: its shape, and what the list adds to the shape.

    The shape is an :class:`~sweep.model.llms.LLM`, the one description of a transformer that both model
    families read (the layout kernel takes it as it is; the data-parallel profiles list its tensors here).

    Attributes:
      family: ``bert``, ``gpt2``, ``vit`` or ``llama``: whose parameter names and order the list follows.
      shape: depth, width, heads (and key/value heads), feed-forward width, vocabulary (``vit``: classes of the
        head), tokens per sample (``vit``: patches + 1, from ``image`` and ``patch``), tied head, source.
      positions: learned position embeddings (``bert``, ``gpt2``).
      image, patch: ``vit`` input size and patch size.
    """

    family: str
    shape: LLM
    positions: int = 0
    image: int = 224
    patch: int = 16

    @property
    def layers(self) -> int:
        return self.shape.layers

    @property
    def hidden(self) -> int:
        return self.shape.hidden

    @property
    def heads(self) -> int:
        return self.shape.heads

    @property
    def kv_heads(self) -> int:
        return self.shape.kv_heads

    @property
    def ffn(self) -> int:
        return self.shape.ffn

    @property
    def vocab(self) -> int:
        return self.shape.vocab

    @property
    def seq_len(self) -> int:
        """Tokens per sample (the shape's ``seq``)."""
        return self.shape.seq

    @property
    def tied(self) -> bool:
        return self.shape.tied

    @property
    def source(self) -> str:
        return self.shape.source

    def tensors(self, seq_len: int | None = None) -> list[Tensor]:
        """Every parameter tensor, in the reference model's parameter order."""
        seq = seq_len or self.seq_len
        return list(_BUILDERS[self.family](self, seq))


def _linear(name, cin, cout, bias=True):
    out = [Tensor(f"{name}.weight", (cout, cin), 2.0 * cin * cout)]
    return out + ([Tensor(f"{name}.bias", (cout,))] if bias else [])


def _norm(name, width, bias=True, passes=4.0):
    out = [Tensor(f"{name}.weight", (width,), 0.0, passes * width)]
    return out + ([Tensor(f"{name}.bias", (width,))] if bias else [])


def _attention_flops(seq, hidden):
    return 4.0 * seq * hidden  # scores (Q K^T) and context (A V), per token


def _bert(t, seq):
    h, f = t.hidden, t.ffn
    yield Tensor("embeddings.word_embeddings.weight", (t.vocab, h), 0.0, h)
    yield Tensor("embeddings.position_embeddings.weight", (t.positions, h), 0.0, h)
    yield Tensor("embeddings.token_type_embeddings.weight", (2, h), 0.0, h)
    yield from _norm("embeddings.LayerNorm", h)
    for i in range(t.layers):
        p = f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            yield from _linear(f"{p}.attention.self.{part}", h, h)
        out = _linear(f"{p}.attention.output.dense", h, h)
        yield dataclasses.replace(
            out[0], flops=out[0].flops + _attention_flops(seq, h), act=3.0 * seq * t.heads
        )
        yield out[1]
        yield from _norm(f"{p}.attention.output.LayerNorm", h)
        inter = _linear(f"{p}.intermediate.dense", h, f)
        yield dataclasses.replace(inter[0], act=2.0 * f)  # GELU
        yield inter[1]
        yield from _linear(f"{p}.output.dense", f, h)
        yield from _norm(f"{p}.output.LayerNorm", h)
    yield from _linear("pooler.dense", h, h)


def _gpt2(t, seq):
    h, f = t.hidden, t.ffn
    # The LM head is tied to wte: its product (2 h vocab per token) is charged to wte.
    yield Tensor("transformer.wte.weight", (t.vocab, h), 2.0 * h * t.vocab, h)
    yield Tensor("transformer.wpe.weight", (t.positions, h), 0.0, h)
    for i in range(t.layers):
        p = f"transformer.h.{i}"
        yield from _norm(f"{p}.ln_1", h)
        # GPT-2's Conv1D stores (in, out); the work is the same as a linear layer's.
        yield Tensor(f"{p}.attn.c_attn.weight", (h, 3 * h), 2.0 * h * 3 * h)
        yield Tensor(f"{p}.attn.c_attn.bias", (3 * h,))
        yield Tensor(
            f"{p}.attn.c_proj.weight", (h, h), 2.0 * h * h + _attention_flops(seq, h), 3.0 * seq * t.heads
        )
        yield Tensor(f"{p}.attn.c_proj.bias", (h,))
        yield from _norm(f"{p}.ln_2", h)
        yield Tensor(f"{p}.mlp.c_fc.weight", (h, f), 2.0 * h * f, 2.0 * f)
        yield Tensor(f"{p}.mlp.c_fc.bias", (f,))
        yield Tensor(f"{p}.mlp.c_proj.weight", (f, h), 2.0 * f * h)
        yield Tensor(f"{p}.mlp.c_proj.bias", (h,))
    yield from _norm("transformer.ln_f", h)


def _vit(t, seq):
    h, f = t.hidden, t.ffn
    patches = (t.image // t.patch) ** 2
    yield Tensor("class_token", (1, 1, h))
    yield Tensor(
        "conv_proj.weight", (h, 3, t.patch, t.patch), 2.0 * 3 * t.patch * t.patch * h * patches / seq
    )
    yield Tensor("conv_proj.bias", (h,))
    yield Tensor("encoder.pos_embedding", (1, patches + 1, h), 0.0, h)
    for i in range(t.layers):
        p = f"encoder.layers.encoder_layer_{i}"
        yield from _norm(f"{p}.ln_1", h)
        yield Tensor(f"{p}.self_attention.in_proj_weight", (3 * h, h), 2.0 * h * 3 * h)
        yield Tensor(f"{p}.self_attention.in_proj_bias", (3 * h,))
        out = _linear(f"{p}.self_attention.out_proj", h, h)
        yield dataclasses.replace(
            out[0], flops=out[0].flops + _attention_flops(seq, h), act=3.0 * seq * t.heads
        )
        yield out[1]
        yield from _norm(f"{p}.ln_2", h)
        fc1 = _linear(f"{p}.mlp.0", h, f)
        yield dataclasses.replace(fc1[0], act=2.0 * f)
        yield fc1[1]
        yield from _linear(f"{p}.mlp.3", f, h)
    yield from _norm("encoder.ln", h)
    yield from (dataclasses.replace(x, flops=x.flops / seq) for x in _linear("heads.head", h, t.vocab))


def _llama(t, seq):
    h, f = t.hidden, t.ffn
    kv = h // t.heads * (t.kv_heads or t.heads)
    head = 2.0 * h * t.vocab
    yield Tensor("model.embed_tokens.weight", (t.vocab, h), head if t.tied else 0.0, h)
    for i in range(t.layers):
        p = f"model.layers.{i}"
        yield Tensor(f"{p}.self_attn.q_proj.weight", (h, h), 2.0 * h * h)
        yield Tensor(f"{p}.self_attn.k_proj.weight", (kv, h), 2.0 * h * kv)
        yield Tensor(f"{p}.self_attn.v_proj.weight", (kv, h), 2.0 * h * kv)
        yield Tensor(
            f"{p}.self_attn.o_proj.weight",
            (h, h),
            2.0 * h * h + _attention_flops(seq, h),
            3.0 * seq * t.heads,
        )
        yield Tensor(f"{p}.mlp.gate_proj.weight", (f, h), 2.0 * h * f, 3.0 * f)  # SiLU and the gate product
        yield Tensor(f"{p}.mlp.up_proj.weight", (f, h), 2.0 * h * f)
        yield Tensor(f"{p}.mlp.down_proj.weight", (h, f), 2.0 * f * h)
        yield Tensor(f"{p}.input_layernorm.weight", (h,), 0.0, 3.0 * h)
        yield Tensor(f"{p}.post_attention_layernorm.weight", (h,), 0.0, 3.0 * h)
    yield Tensor("model.norm.weight", (h,), 0.0, 3.0 * h)
    if not t.tied:
        yield Tensor("lm_head.weight", (t.vocab, h), head)


_BUILDERS = {"bert": _bert, "gpt2": _gpt2, "vit": _vit, "llama": _llama}
FAMILIES = tuple(_BUILDERS)


def transformer(
    family: str,
    layers: int,
    hidden: int,
    heads: int,
    ffn: int,
    vocab: int,
    seq_len: int,
    *,
    kv_heads: int = 0,
    positions: int = 0,
    tied: bool = False,
    image: int = 224,
    patch: int = 16,
    source: str = "",
) -> Transformer:
    """A :class:`Transformer` of ``family`` with this shape (``llama``: SwiGLU; the others GELU)."""
    mlp = "swiglu" if family == "llama" else "gelu"
    shape = LLM(
        layers, hidden, heads, seq_len, vocab, ffn=ffn, kv_heads=kv_heads, mlp=mlp, tied=tied, source=source
    )
    return Transformer(family, shape, positions, image, patch)


def _gpt2_size(layers, hidden, heads):
    return transformer(
        "gpt2",
        layers,
        hidden,
        heads,
        4 * hidden,
        50257,
        1024,
        positions=1024,
        source=f"Hugging Face GPT2LMHeadModel ({layers} layers, hidden {hidden})",
    )


TRANSFORMERS = {
    "bert-base": transformer(
        "bert",
        12,
        768,
        12,
        3072,
        30522,
        128,
        positions=512,
        source="Hugging Face BertModel, bert-base-uncased (with the pooler)",
    ),
    "bert-large": transformer(
        "bert",
        24,
        1024,
        16,
        4096,
        30522,
        128,
        positions=512,
        source="Hugging Face BertModel, bert-large-uncased (with the pooler)",
    ),
    "gpt2": _gpt2_size(12, 768, 12),
    "gpt2-medium": _gpt2_size(24, 1024, 16),
    "gpt2-large": _gpt2_size(36, 1280, 20),
    "gpt2-xl": _gpt2_size(48, 1600, 25),
    "vit-b16": transformer(
        "vit",
        12,
        768,
        12,
        3072,
        1000,
        197,
        image=224,
        patch=16,
        source="torchvision vit_b_16 (ImageNet-1k head)",
    ),
    "llama-1b": transformer(
        "llama",
        16,
        2048,
        32,
        8192,
        128256,
        2048,
        kv_heads=8,
        tied=True,
        source="Llama 3.2 1B shape (LlamaForCausalLM, tied embeddings)",
    ),
    "llama-7b": transformer(
        "llama", 32, 4096, 32, 11008, 32000, 4096, source="Llama 2 7B shape (LlamaForCausalLM)"
    ),
}
