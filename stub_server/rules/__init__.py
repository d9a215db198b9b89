"""The document's rules that are more than one handler's business, one module per rule; a fault
(``stub_server.fault_injection``) replaces one through ``stub_server.state.RuleHooks``.
"""
