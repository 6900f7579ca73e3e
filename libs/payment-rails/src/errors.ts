// The one error every payment rail raises for "try again later", told apart from a refused payment.

/** The facilitator or the settlement chain could not be reached; the payment itself may be fine. */
export class FacilitatorUnavailableError extends Error {}
