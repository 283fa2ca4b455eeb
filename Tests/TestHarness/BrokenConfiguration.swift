/// Configuration texts that `gattway` must refuse, shared by the tests of the parser
/// (ConfigTests) and of the command line (CLITests).
public enum BrokenConfiguration {
    /// Five different mistakes, which must all be reported (not only the first): an unknown key
    /// (line 3), a bad transport (5), a non-integer (6), a bad UUID (14) and a misspelt sensor
    /// (18). The tests expect those lines: moving one changes their expectations.
    public static let fiveMistakes = """
        device:
          name: greenhouse
          colour: green
        bluetooth:
          transport: usb0
          max_centrals: many
        sensors:
          - id: door
            kind: binary
            line: GPIO17
        services:
          - uuid: 181A
            characteristics:
              - uuid: 2A6G
                format: uint8
                source: {sensor: door}
              - uuid: 2A6E
                source: {sensor: dor}
        """
}
