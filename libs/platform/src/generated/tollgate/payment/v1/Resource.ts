// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * Resource is the paid thing: one endpoint of the catalog on one network, or a top-up of credits.
 */
export interface Resource {
  /**
   * The catalog's name of what is paid for (libs/catalog paidResource): an endpoint's path
   * template, for example "/api/chain/block/{number}", or a top-up, "/api/credits?amount=5".
   */
  'endpoint'?: (string);
  'network'?: (string);
  /**
   * The absolute URL the client called.
   */
  'url'?: (string);
  /**
   * A top-up only: the account its credits go to when the buyer named one (an API key's, resolved
   * by the gateway); empty: the account bound to the payer. Kept with the payment and carried by its
   * settlement event, so a settled top-up whose credit call was lost is credited from the ledger.
   */
  'account'?: (string);
}

/**
 * Resource is the paid thing: one endpoint of the catalog on one network, or a top-up of credits.
 */
export interface Resource__Output {
  /**
   * The catalog's name of what is paid for (libs/catalog paidResource): an endpoint's path
   * template, for example "/api/chain/block/{number}", or a top-up, "/api/credits?amount=5".
   */
  'endpoint': (string);
  'network': (string);
  /**
   * The absolute URL the client called.
   */
  'url': (string);
  /**
   * A top-up only: the account its credits go to when the buyer named one (an API key's, resolved
   * by the gateway); empty: the account bound to the payer. Kept with the payment and carried by its
   * settlement event, so a settled top-up whose credit call was lost is credited from the ledger.
   */
  'account': (string);
}
