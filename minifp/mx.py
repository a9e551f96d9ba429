"""OCP Microscaling (MX) v1.0 block quantisation: blocks of elements sharing one e8m0 power-of-two scale."""
