/// The Firebase security-rules language.
public enum HearthRules {}
