"""The typed settings pass: one pydantic model of the whole configuration file.

* :mod:`bot.settings.values`: the base of every table's model and the kinds of value (each
  with its words for a wrong value);
* :mod:`bot.settings.counts`: ``[defaults]`` and ``[[counts]]`` (a count's ``source`` is
  :mod:`bot.ingest.sources.settings`);
* :mod:`bot.settings.document`: the whole file, with a table per installed platform whose model
  its plug-in gives (``bot.platform.Plugin.settings``);
* :mod:`bot.settings.problems`: pydantic's errors as ``FILE: KEY: PROBLEM`` lines, in file
  order, with a did-you-mean for a misspelt key.

``bot.settings.loader`` runs the pass and hands the rest of the code its
:class:`~bot.settings.loader.Config`.

Adding a key is one line in the model of its table, e.g. in ``[server]``
(:class:`bot.settings.document.ServerConfig`)::

    instance: Filled = "main"

with a type from :mod:`bot.settings.values` (``Text``, ``Whole``, ``Flag``, ``Positive``,
``EnvName``, ``Ids``, ``Limits``, ``between(...)``, ``one_of(...)``, ...), a default unless it
is required, and its line in ``config/example.toml``. A secret is never a key: name the
variable that holds it (an ``EnvName``, like ``push_secret_env``) or declare it in the plug-in
(``bot.platform.SecretNeed``).
"""
