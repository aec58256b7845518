"""Reading and modelling the shared files: the base of the order-keeping models, and the pydantic-
free shapes a process that looks once reads them with."""
