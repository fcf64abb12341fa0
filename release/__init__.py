"""Release tooling, in the repository only (never in the wheel or the image): the one version and
every place that names it (``version``), a version's CHANGELOG section (``changelog``), the
release artifacts built into ``dist/`` (``dist``) and their proof (``verify``).

``make dist`` / ``make dist-check`` run the last two; the release workflow
(``.github/workflows/release.yaml``) calls ``changelog`` and ``version`` itself, so what CI tests
here is what a tag publishes.
"""
