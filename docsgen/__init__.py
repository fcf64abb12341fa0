"""Generated pages of the docs site (in the repository only, like ``bench``: not in the wheel).

The references are made from the code and the chart on every ``mkdocs build`` (``hook.py``), so
they cannot drift: ``settings`` from the settings tree (every flag and ``KUSTODIAN_*`` variable),
``chart`` from ``values.yaml``'s comments, and ``alerts`` checks that every alert of the chart's
PrometheusRule has a runbook section.  ``python -m docsgen DIR`` writes the generated pages to
``DIR`` for reading without mkdocs.
"""
