"""Stand-ins shared by the vLLM tests (no GPU, no vLLM engine needed)."""


class StubTokenizer:
    """Just enough tokenizer for the vLLM backends: an eos id, a stop token, decoding."""

    eos_token_id = 2

    def get_vocab(self):
        return {"<|im_end|>": 3}

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(map(str, ids))
