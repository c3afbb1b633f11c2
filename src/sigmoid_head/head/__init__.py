"""The Sigmoid Head and the folder that holds it.

* ``layer``: the head itself (module and loss); ``model``: a frozen backbone with its head;
* ``folder``: this library's folder format (``head_config.json`` + ``head.safetensors``),
  ``released``: the paper authors' released format, ``reader``: which of them a folder is
  (:func:`~sigmoid_head.head.reader.read_head_folder`, the one reader of a head folder);
* ``files``: every file a head folder can hold, ``extras``: the base of what ``calibrate``
  saves beside the head;
* ``hub``, ``model_card`` and ``push_config``: the Hugging Face Hub.
"""
