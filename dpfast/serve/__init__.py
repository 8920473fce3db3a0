"""``dpfast serve``: the central pipeline and the local-DP aggregation server as an HTTP
service, with authenticated analysts and a dashboard (the ``serve`` extra:
``pip install 'dpfast[serve]'``).

* :mod:`.config`: the TOML configuration and its checks;
* :mod:`.store`: the service's durable state (token hashes, report aggregates, batch ids);
* :mod:`.tokens`: bearer tokens (analyst, admin, ingestion);
* :mod:`.service`: one worker's :class:`~dpfast.serve.service.Service` (the session on the
  shared ledger, the collections);
* :mod:`.app`: the Starlette app (the JSON API), :mod:`.dashboard` and :mod:`.svg`.

The top layer: it imports the session, budget and local layers and nothing imports it.
It adds no privacy logic: every answer comes from :meth:`dpfast.Session.sql` and the
ledger, or from the local-DP aggregator.  Nothing here is imported by ``import dpfast``.
"""
