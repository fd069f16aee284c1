"""An HR assistant: multiply, annual leave, weather, and the calculator."""
