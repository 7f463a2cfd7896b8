# The catalogue runs the built CLI (bin/vidax) as a child process: build it first.
add_dependencies(test_cli vidax_app)
