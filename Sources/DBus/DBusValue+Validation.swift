extension DBusValue {
  /// Checks that the value can be sent: container elements match their declared signatures,
  /// dictionary keys are basic types, structures are not empty, strings contain no NUL and the
  /// signature is valid (at most 255 bytes, 32 levels of arrays and of structures).
  ///
  /// - Throws: ``DBusError`` `invalid_argument` naming the first problem.
  public func validate() throws(DBusError) {
    try validateTree()
    guard NameRules.completeTypes(signatureText)?.count == 1 else {
      throw DBusError(.invalidArgument, "value has an invalid signature '\(signatureText)'")
    }
  }

  private func validateTree() throws(DBusError) {
    switch self {
    case .string(let text):
      if text.utf8.contains(0) {
        throw DBusError(.invalidArgument, "string contains a NUL character")
      }
    case .array(let element, let values):
      guard element.isSingleCompleteType else {
        throw DBusError(.invalidArgument, "array element signature '\(element)' is not one type")
      }
      for value in values {
        guard value.signatureText == element.rawValue else {
          throw DBusError(
            .invalidArgument,
            "array of '\(element)' holds a value of type '\(value.signatureText)'")
        }
        try value.validateTree()
      }
    case .dictionary(let key, let valueType, let entries):
      guard key.rawValue.utf8.count == 1, "ybnqiuxtdsogh".contains(key.rawValue) else {
        throw DBusError(.invalidArgument, "dictionary key signature '\(key)' is not a basic type")
      }
      guard valueType.isSingleCompleteType else {
        throw DBusError(
          .invalidArgument, "dictionary value signature '\(valueType)' is not one type")
      }
      for (k, v) in entries {
        guard k.signatureText == key.rawValue, v.signatureText == valueType.rawValue else {
          throw DBusError(
            .invalidArgument,
            "dictionary of '\(key)' → '\(valueType)' holds an entry of types "
              + "'\(k.signatureText)' → '\(v.signatureText)'")
        }
        try k.validateTree()
        try v.validateTree()
      }
    case .variant(let inner):
      try inner.validate()
    case .structure(let fields):
      guard !fields.isEmpty else {
        throw DBusError(.invalidArgument, "a structure needs at least one field")
      }
      for field in fields { try field.validateTree() }
    default:
      break
    }
  }
}
