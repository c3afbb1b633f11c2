"""Integrations with the tools quality-estimation users already work in.

* :mod:`.hub`: heads on the Hugging Face Hub (download with revision/token, upload with a
  generated model card from :mod:`.model_card`);
* :mod:`.released`: the paper authors' released heads (``model.safetensors`` + a
  ``config.json`` written for ``trust_remote_code``), loaded without running their code;
* :mod:`.polygraph`: an LM-Polygraph plugin (stat calculator + estimators), needs the
  ``polygraph`` extra.

Integrations import the library, never the reverse (``SigmoidHeadModel.from_pretrained``
and ``push_to_hub`` reach them through function-level imports only).
"""
