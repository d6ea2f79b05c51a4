/// Firebase Authentication: accounts, password hashing, tokens.
public enum HearthAuth {}
