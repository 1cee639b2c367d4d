"""fagen as a transformers attention implementation.

    import fagen.integrations.transformers as ft
    ft.register()
    model = AutoModelForCausalLM.from_pretrained(name,
        attn_implementation="fagen", torch_dtype=torch.bfloat16)

register() adds "fagen" to transformers' AttentionInterface (and its
AttentionMaskInterface, with flash-attention's mask: None unless the
batch is padded).  Each attention call goes to torch.ops.fagen.attention
(fagen.ops, so torch.compile keeps it whole): causal as the layer says
(bottom-right aligned, so decoding with a KV cache is right), the layer's
scaling, grouped-query K/V as they are, sliding windows, logit softcaps
and gpt-oss's sinks.  What fagen cannot do is refused with ValueError:
padded batches (an attention mask), dropout in training, and what
fagen.attention refuses (dtypes other than bf16/f16, head dims other than
64, 128, 256).  Needs transformers 4.53 or later.  Issue #17.
"""

NAME = "fagen"
_ops = None     # fagen.ops, imported by register(): it needs PyTorch


def attention_forward(module, query, key, value, attention_mask,
                      scaling=None, dropout=0.0, sliding_window=None,
                      softcap=None, s_aux=None, **kwargs):
    """transformers' attention signature: query (B, H, Sq, D), key and
    value (B, Hk, Sk, D); returns ((B, Sq, H, D), None)."""
    if attention_mask is not None:
        raise ValueError("fagen: padded batches are not supported (the "
                         "model was given an attention mask with padding)")
    if dropout and getattr(module, "training", False):
        raise ValueError("fagen: attention dropout is not supported")
    causal = kwargs.get("is_causal", getattr(module, "is_causal", True))
    window = None
    if sliding_window is not None:
        # transformers' window keeps the sliding_window - 1 keys before
        # the query's own
        window = (int(sliding_window) - 1, 0 if causal else
                  int(sliding_window) - 1)
    sinks = s_aux.float().contiguous() if s_aux is not None else None
    out, _ = _ops.attention(query, key, value, causal=bool(causal),
                            scale=scaling, window=window, softcap=softcap,
                            sinks=sinks)
    return out.transpose(1, 2).contiguous(), None


def register(name=NAME):
    """Make attn_implementation=name (default "fagen") use fagen."""
    global _ops
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import (AttentionMaskInterface,
                                                flash_attention_mask)
    except ImportError as e:
        raise ImportError("fagen.integrations.transformers needs "
                          "transformers 4.53 or later (%s)" % e) from None
    from fagen import ops
    _ops = ops
    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, flash_attention_mask)
