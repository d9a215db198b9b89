"""An executable model of the interface document's rules."""
