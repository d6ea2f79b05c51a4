public enum HearthServerPlaceholder {}
