"""The generic built-in backends as data: name, factory target, capabilities, weights kind, help, alias
defaults and the help of the options particular to each (a paper's own baselines are declared by its plugin
module, connote/<paper>/plugin.py). :mod:`connote.models.registry` registers them lazily, so listing them
imports nothing heavy; nothing here imports anything.
"""

from __future__ import annotations

#: Help for the options of the matching engine's backends that differ from connote.models.options.OPTION_HELP.
_MATCHER_OPTIONS = {"batch_size": "image-caption pairs per scoring batch; auto: 16 on a CPU, 64 on a GPU (lowered "
                                  "to fit memory_budget)"}
#: Help for the options of the OpenAI-compatible API backends (openai, openai-video, vllm, sglang).
_API_OPTIONS = {
    "max_side": "images are resized so that their longer side is at most this many pixels before sending",
    "temperature": "sampling temperature of generated text (0: greedy)",
    "max_tokens": "longest answer in tokens; unset: the task's own limit",
    "text_first": "put the prompt before the images in the message (default: images first)",
    "stream": "ask for generated text as a stream, to record the time to its first token (the text is the same)",
    "prompt": "the Yes/No matching prompt; {caption} is replaced by the caption",
    "concurrency": "requests in flight at the start; unset: 8 adaptive, 4 with adaptive=false",
    "timeout": "seconds one HTTP attempt may take",
    "max_retries": "retries of a failed or throttled request",
    "backoff": "seconds before the first retry (doubling after each)",
    "base_url": "the server's URL (…/v1); unset: OPENAI_BASE_URL, else api.openai.com",
    "top_logprobs": "log-probabilities asked for per answer token (p(match) from the Yes/No tokens among them)",
    "max_retry_after": "longest Retry-After (seconds) a throttled request waits; longer: it fails",
    "deadline": "seconds one request may take in all, retries and waits included",
    "adaptive": "raise and lower the requests in flight from the server's answers (TCP-like); false: a fixed pool",
    "max_concurrency": "the most requests in flight with adaptive=true",
    "latency_factor": "stop raising concurrency while latency is over this many times the fastest seen",
}
#: ... and those of the servers connote starts itself (vllm, sglang).
_SERVED_OPTIONS = {
    **_API_OPTIONS,
    "executable": "the engine's command (default: the installed vllm / sglang)",
    "port": "port on 127.0.0.1 for the server; unset: a free one",
    "startup_timeout": "seconds to wait for the server to answer after it starts",
    "max_restarts": "times a server that died is started again",
    "images_per_prompt": "the most images one prompt may carry (the server's multimodal limit)",
    "max_logprobs": "the most log-probabilities per token the server allows",
    "args": "more command-line arguments for the server, as one shell-quoted string",
    "base_url": "not accepted: the address is chosen when the server starts (use openai:MODEL?base_url=...)",
}
_CHAT_VLM_OPTIONS = {
    "frames": "video frames sampled uniformly per clip for generation",
    "frames_as": "how frames reach the model: images (one image each) or video (one video input)",
    "batch_size": "image-caption pairs per Yes/No scoring batch, and requests per generate call",
    "prompt": "the Yes/No matching prompt; {caption} is replaced by the caption",
}

#: The built-in backends, in the order `connote models` lists them.
BUILTIN: list[tuple[str, str, tuple[str, ...], str, str, dict[str, str], dict[str, str]]] = [
    ("objects", "connote.models.objects:ObjectsMatcher.from_spec", ("match", "mask"), "none",
     "Offline baseline: EfficientNet-Lite0 ImageNet labels vs caption, compared with MiniLM.", {},
     {"device": "where the embedded models run: cpu or cuda",
      "top_k": "ImageNet labels per image compared with the caption",
      "threshold": "cosine similarity at which p(match) = 0.5",
      "scale": "steepness of p(match) = sigmoid(scale * (cos - threshold))"}),
    ("hf-blip-itm", "connote.models.hf_blip:BlipItmMatcher.from_spec", ("match", "mask"), "hf",
     "BLIP image-text matching head (BlipForImageTextRetrieval).", {},
     {**_MATCHER_OPTIONS,
      "cache_cross_attention": "compute each image's cross-attention keys and values once for all its captions",
      "attention": "sdpa (torch's fused attention, same values, less memory) or eager (transformers' own)"}),
    ("hf-blip2-itm", "connote.models.hf_blip2:Blip2ItmMatcher.from_spec", ("match", "mask"), "hf",
     "BLIP-2 Q-Former image-text matching head (Blip2ForImageTextRetrieval).", {},
     {**_MATCHER_OPTIONS,
      "attention": "sdpa (rows grouped by image: each image's cross-attention keys and values computed once for "
                   "all its captions, no copy of its state per row) or eager (transformers' own Q-Former, a state "
                   "per row)"}),
    ("hf-flava-itm", "connote.models.hf_flava:FlavaItmMatcher.from_spec", ("match", "mask"), "hf",
     "FLAVA multimodal encoder ITM head (FlavaForPreTraining).", {}, _MATCHER_OPTIONS),
    ("hf-clip", "connote.models.hf_clip:ClipMatcher.from_spec", ("match", "mask"), "hf",
     "CLIP cosine similarity, calibrated to p(match) by a logistic map.", {},
     {**_MATCHER_OPTIONS, "threshold": "cosine similarity at which p(match) = 0.5",
      "scale": "steepness of p(match) = sigmoid(scale * (cos - threshold)); unset: the model's logit scale"}),
    ("albef-itm", "connote.models.albef:AlbefItmMatcher.from_spec", ("match", "mask"), "name",
     "ALBEF ITM head on a released checkpoint file (ALBEF.pth, mscoco.pth, ...) or its URL in torch's cache.", {},
     {**_MATCHER_OPTIONS, "tokenizer": "hub id or folder of the BERT tokenizer the checkpoint was trained with",
      "image_size": "input resolution in pixels (position embeddings are interpolated to it)",
      "vision_heads": "attention heads of the ViT; unset: read from the checkpoint's shapes",
      "text_heads": "attention heads of the BERT encoder; unset: read from the checkpoint's shapes"}),
    ("hf-lxmert", "connote.models.lxmert:LxmertMatcher.from_spec", ("match", "mask"), "hf",
     "LXMERT cross_relationship_score (LxmertForPreTraining) on region features (?features=.tsv/.h5/npz dir).",
     {}, {**_MATCHER_OPTIONS, "features": "the region features: a bottom-up-attention .tsv, an .h5 file or a folder "
                                          "of .npz files (required)"}),
    ("hf-vlm", "connote.models.hf_vlm:ChatVlm.from_spec", ("match", "mask", "generate"), "hf",
     "Chat VLM (LLaVA, LLaVA-NeXT, Qwen-VL, Idefics): Yes/No p(match); text from many images or frames.", {},
     _CHAT_VLM_OPTIONS),
    ("hf-vlm-yesno", "connote.models.hf_vlm:ChatVlm.from_spec", ("match", "mask", "generate"), "hf",
     "Alias of hf-vlm (its CV-Probes name): p(match) = softmax over the Yes/No answer-token logits.", {},
     _CHAT_VLM_OPTIONS),
    ("hf-video-chat", "connote.models.hf_vlm:ChatVlm.from_spec", ("match", "mask", "generate"), "hf",
     "Alias of hf-vlm with frames passed as one video (Video-LLaVA, LLaVA-NeXT-Video, Qwen2-VL).",
     {"frames_as": "video"}, _CHAT_VLM_OPTIONS),
    ("openai", "connote.models.openai_api:OpenAIChat.from_spec", ("match", "generate"), "name",
     "OpenAI-compatible chat API (GPT-4o or a local server); key/base URL from the environment.", {}, _API_OPTIONS),
    ("openai-video", "connote.models.openai_api:OpenAIChat.from_spec", ("match", "generate"), "name",
     "Alias of openai for videos: six frames (two from each third) sent as images after the prompt.",
     {"max_side": "512", "text_first": "true"}, _API_OPTIONS),
    ("vllm", "connote.models.serving:VllmChat.from_spec", ("match", "generate"), "name",
     "A chat VLM served by vLLM, started by connote on 127.0.0.1 (vllm extra); reached as the openai backend.", {},
     _SERVED_OPTIONS),
    ("sglang", "connote.models.serving:SglangChat.from_spec", ("match", "generate"), "name",
     "A chat VLM served by SGLang, started by connote on 127.0.0.1 (sglang extra); reached as the openai backend.",
     {}, _SERVED_OPTIONS),
    ("git-video", "connote.models.git:GitVideoCaptioner.from_spec", ("generate",), "hf",
     "GIT video/image captioning (GitForCausalLM, e.g. microsoft/git-large-vatex).", {},
     {"num_beams": "beams of beam search (1: greedy)"}),
    ("caption-llm", "connote.models.caption_llm:CaptionLlmGenerator.from_spec", ("generate",), "hf",
     "Captioner per image, then a causal LM writes the text from the numbered captions (option llm=...).", {},
     {"llm": "hub id or folder of the causal LM that writes the text (required)",
      "prompt": "the LM's prompt; {captions} is replaced by the numbered captions",
      "caption_tokens": "longest caption per image in new tokens",
      "max_new_tokens": "longest text the LM writes, in new tokens",
      "llm_revision": "hub revision of the LM's weights"}),
]
