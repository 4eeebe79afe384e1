"""``python -m mcp_resume``: compile the plugin into the wasmtime cache now (install time), not at the first start."""
from ._runtime import compiled_plugin
compiled_plugin()
