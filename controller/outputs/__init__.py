"""Outputs of `dpctl generate`: each a pure function fabric -> bytes, written together."""
