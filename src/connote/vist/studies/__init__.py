"""The VIST annotation studies on Potato: storytelling, re-telling, descriptions (DII, DIS)."""
