"""Prompts for generative matchers; any change bumps ``MATCH_PROMPT_VERSION`` (it is fingerprinted)."""

MATCH_PROMPT_VERSION = 1
MATCH_PROMPT = (
    "Does the following caption match the image? Caption: \"{caption}\" "
    "Answer with Yes or No."
)
YES_WORDS = ("yes",)
NO_WORDS = ("no",)


def match_prompt(caption: str, template: str = MATCH_PROMPT) -> str:
    return template.format(caption=caption)
