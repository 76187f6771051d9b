"""What the person sees: events drawn on a terminal or written exactly to a pipe."""
