"""Device presets as data, one module per source (each with a ``build()`` returning a Device); the package
``joulegym.devices`` registers them by name in one list."""
