# test_cli_serve.cpp runs the built CLI (bin/vidax serve) as a child process.
add_dependencies(test_serve vidax_app)
