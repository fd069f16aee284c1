"""The HR assistant of seed 000: multiply, annual leave, weather, and the calculator."""
