"""What the tests share: tiny models built from configs, the transformers reference a
matcher is held to, fixture data written as the releases write it, fake
servers on 127.0.0.1 (OpenAI-compatible API, vLLM stand-in), the Potato browser driver, two-rank launches, and
the ``needs`` markers. Test modules import from here only; nothing here is collected as a test."""
