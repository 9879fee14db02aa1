extension ConfigurationLoader {
  /// For the fuzzers in `Fuzz/` (not part of the supported API): checks a configuration file's
  /// text and command-line arguments as ``load(file:environment:arguments:)`` does, without
  /// the file system.
  ///
  /// - Parameters:
  ///   - yaml: The file's text.
  ///   - arguments: Command-line options.
  /// - Returns: The first problem, `nil` when the configuration is valid.
  @_spi(Fuzzing)
  public static func problem(yaml: String, arguments: [String]) -> ConfigurationError? {
    do {
      let file = try YAMLConfigurationParser.layer(yaml: yaml, source: "fuzz.yaml")
      let options = try CommandLineConfigurationParser.layer(from: arguments)
      _ = try configuration(merging: [options, file])
      return nil
    } catch {
      return error
    }
  }
}
