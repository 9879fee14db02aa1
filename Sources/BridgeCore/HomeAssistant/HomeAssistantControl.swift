/// The Home Assistant entity a writable characteristic gets (`homeassistant.controls`, rules
/// `<selector>=<control>`), whose command topic is the characteristic's `/set`.
///
/// The commands are JSON that `/set` takes whatever the characteristic's value format:
/// a `button` writes `{"hex":"01"}` when pressed, a `switch` writes `{"hex":"01"}` (on) and
/// `{"hex":"00"}` (off), a `text` writes what was typed as `{"utf8":…}`.
public enum HomeAssistantControl: String, CaseIterable, Sendable, Hashable, SelectorRuleValue {
  /// A `button` entity.
  case button
  /// A `switch` entity (optimistic: the characteristic's value is not read back).
  case `switch`
  /// A `text` entity (up to 255 characters, Home Assistant's limit).
  case text

  /// `Home Assistant control`.
  public static var ruleNoun: String { "Home Assistant control" }
  /// `*/5a1d0000-…/5a1d0001-…=button`.
  public static var ruleExample: String { "A4C1381E29DF/fff0/fff1=switch" }
}

/// A control rule, `<selector>=<control>` (`homeassistant.controls`).
public typealias HomeAssistantControlRule = SelectorRule<HomeAssistantControl>
