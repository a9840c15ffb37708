"""`dpctl accept`: the bring-up acceptance test of a cabled fabric (docs/accept.md)."""
