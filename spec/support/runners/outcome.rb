# frozen_string_literal: true

# The outcome of one call, as every runner writes it (Marshal, to the spec that started it) and as the specs read it
# back, in the child and in-process alike. An exception is [class name, message, type]: `type` is the type code of a
# Thrift::ProtocolException or Thrift::TransportException, nil for any other exception. A value is what the runner
# makes of it (a struct's inspect, a String with its encoding, ...). Where a value could pass for an exception (the
# runners of arbitrary calls), each outcome is tagged: [:ok, value] or [:error, class name, message, type].
# Needs nothing loaded.
module Outcome
  module_function

  # What `e` raised. `message`: what of the message is compared, where not all of it (first_line; `.b` where a
  # message's encoding may differ between the two sides and only its bytes count).
  def error(e, message = e.message) = [e.class.name, message, e.respond_to?(:type) ? e.type : nil]

  def ok(value) = [:ok, value]
  def failed(e, message = e.message) = [:error, *error(e, message)]

  # The message's first line: later lines (did_you_mean's suggestions, error_highlight's source line) name objects and
  # code of one process.
  def first_line(e) = e.message.lines.first.to_s.chomp

  # Whether an untagged outcome is an exception's: [class name, message, type], the name that of an error or
  # exception class.
  def error?(outcome)
    outcome.is_a?(Array) && outcome.size == 3 && outcome[0].is_a?(String) && outcome[0].match?(/Error|Exception/)
  end

  # Whether a tagged outcome is an exception's, or a value's.
  def failed?(outcome) = outcome[0] == :error
  def ok?(outcome) = outcome[0] == :ok

  # An exception's parts, tagged or not.
  def class_name(outcome) = outcome[-3]
  def message(outcome) = outcome[-2]
  def type(outcome) = outcome[-1]
end
