The house is small .
The dog sleep .
The home is little .
