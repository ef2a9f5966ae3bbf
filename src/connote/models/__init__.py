"""Model backends behind small protocols (see ``connote.models.protocols``).

A model is named on the command line by a spec ``<backend>[:<weights>][?key=value&...]``,
e.g. ``hf-blip-itm:Salesforce/blip-itm-base-coco`` or ``hf-clip:/models/clip?temperature=0.01``.
``<weights>`` is a hub id or a local directory; options are passed to the backend's factory.
"""

from connote.models.registry import MODELS, ModelSpec, load_model, parse_spec

__all__ = ["MODELS", "ModelSpec", "load_model", "parse_spec"]
