/// gattway's version: `gattway --version`, and the software version Home Assistant shows.
public enum GattwayVersion {
    public static let current = "0.1.0"
}
