/**
 * A listener's bounds on the shape of a JSON request body (Vault's listener settings of the same
 * names). Here rather than with the parser because a standby hands them to the active node with
 * each request it forwards: the node the client sent a body to is the one that judges it.
 */
export interface JsonLimits {
  /** `max_json_depth`: objects and arrays nested in one another, the outermost counting as 1. */
  maxDepth: number;
  /** `max_json_string_value_length`: bytes of one string (a key or a value) as sent, escapes included. */
  maxStringLength: number;
  /** `max_json_object_entry_count`: entries of one object. */
  maxObjectEntries: number;
  /** `max_json_array_element_count`: elements of one array. */
  maxArrayElements: number;
}
