"""Remote A2A agents: a registry the operator fills by card URL (``/registry``), kept healthy by
periodic checks of the cards, and listed beside the mesh's own agents in ``a2a_discover``."""
