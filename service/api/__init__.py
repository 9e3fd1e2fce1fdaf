"""HTTP layer: controllers, request/answer Structs, error mapping, guards."""
