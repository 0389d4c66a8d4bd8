"""dafzarr's implementation: the one private Python layer under the public modules.

The public modules (:mod:`dafzarr.zipstore`, :mod:`dafzarr.daf`, :mod:`dafzarr.refs`, ...) import
their names from here. Folders follow the architecture: ``io`` (byte sources), ``codecs``,
``zipstore``, ``arrayfile``, ``refs``, ``daf`` (with ``query`` and ``ops``), ``anndata`` and
``cli``, over shared modules (``atomic``, ``casting``, ``config``, ``crc``, ...). Module names
here carry no leading underscore (the folder says they are private); inside a module, a leading
underscore marks a name used by that module only. The compiled extensions stay
``dafzarr._<name>``.
"""
