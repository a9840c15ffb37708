"""`dpctl simulate`: a flow-level analysis of the generated fabric (loads, bottleneck, failures)."""
