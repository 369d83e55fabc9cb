import { IdentityForwardingError } from '@gw/identity-forwarding/identity';

/**
 * A virtual server's definition is not valid (CONTRACT section 16): `400 invalid_virtual_server`
 * from the admin API, a start-up error from the config file. The message names the field and says
 * what to write.
 */
export class InvalidVirtualServerError extends IdentityForwardingError {
  readonly code = 'invalid_virtual_server';
  readonly status = 400;
  readonly type = 'invalid_request_error';
}

/**
 * Two members of a virtual server would list one public tool (or prompt) name: two members with the
 * same prefix (or both without one) that list the same name, or two renames to one name.
 * `400 virtual_tool_collision`; the message names both members and the name.
 */
export class VirtualToolCollisionError extends IdentityForwardingError {
  readonly code = 'virtual_tool_collision';
  readonly status = 400;
  readonly type = 'invalid_request_error';
}
