# The CLI test runs bin/vidax.
add_dependencies(test_parity vidax_app)
