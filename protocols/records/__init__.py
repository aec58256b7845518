"""Reading and modelling the shared files: the base of the order-keeping models, and the pydantic-
free `Shape` and `Plain` that each noun's ``shape`` module builds on."""
